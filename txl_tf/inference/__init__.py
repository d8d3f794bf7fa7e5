"""Inference loops and serving: the one evaluation loop, generation, sampling, context losses,
RECL and the serving module.

  evaluation         the evaluation loop (segment_nll, Evaluator) used by training, evaluate,
                     the benchmarks and the SavedModel's score_text
  generation         prompt consumption and cached decoding (Generator, graph functions)
  sampling           temperature / top-k / top-p sampling
  context_losses     per-token losses at exact context lengths (Appendix C's input)
  recl               the relative effective context length of a model group (Appendix C)
  serving            ServingModule (the SavedModel's signatures); serving_limits: ServingLimits
  serving_warmup     TF Serving's warmup requests of an export (PredictionLog records)
  server_config      TF Serving's models.config and batching_parameters.txt of an export

The commands that use them (evaluate, generate, export, recl) are in `txl_tf/commands/`.
"""
