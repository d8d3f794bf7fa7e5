"""Inference loops: the one evaluation loop, context losses and RECL.

  evaluation         the evaluation loop (segment_nll, Evaluator) used by training, evaluate,
                     the benchmarks and the SavedModel's score_text
  context_losses     per-token losses at exact context lengths (Appendix C's input)
  recl               the relative effective context length of a model group (Appendix C)

Generation (sampling, the cached decoding loops, `Generator`) is in `txl_tf/generation/`; the
SavedModel's serving module is in `txl_tf/serving/`; the commands that use these loops
(evaluate, generate, recl) are in `txl_tf/commands/`.
"""
