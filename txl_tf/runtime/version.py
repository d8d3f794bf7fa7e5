"""The version of txl-tf (pyproject.toml's `version`), `txl_tf.__version__`."""
__version__ = "0.1.0"
