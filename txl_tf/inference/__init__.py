"""Inference: the one evaluation loop, generation, sampling and the serving module."""
