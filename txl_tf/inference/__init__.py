"""Inference loops: the one evaluation loop, generation, sampling, context losses and RECL.

  evaluation         the evaluation loop (segment_nll, Evaluator) used by training, evaluate,
                     the benchmarks and the SavedModel's score_text
  generation         prompt consumption and cached decoding (Generator, graph functions)
  sampling           temperature / top-k / top-p sampling
  context_losses     per-token losses at exact context lengths (Appendix C's input)
  recl               the relative effective context length of a model group (Appendix C)

The SavedModel's serving module is in `txl_tf/serving/`; the commands that use these loops
(evaluate, generate, recl) are in `txl_tf/commands/`.
"""
