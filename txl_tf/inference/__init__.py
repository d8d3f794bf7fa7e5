"""Inference: the one evaluation loop, generation, sampling and the serving module.

  evaluation         the evaluation loop (segment_nll, Evaluator) used by training, evaluate.py,
                     the benchmarks and the SavedModel's score_text
  model_evaluation   EvalOptions -> a model directory's checkpoint evaluated (evaluate.py)
  generation         prompt consumption and cached decoding (Generator, graph functions)
  text_generation    GenerateOptions -> text generated from a prompt (generate.py)
  sampling           temperature / top-k / top-p sampling
  serving            ServingModule (the SavedModel's signatures) and ServingLimits
  saved_model_export ExportOptions -> a versioned SavedModel (export.py)
  serving_warmup     TF Serving's warmup requests of an export (PredictionLog records)
  server_config      TF Serving's models.config and batching_parameters.txt of an export
"""
