"""Serving: the SavedModel for TF Serving and everything written with it.

  module             ServingModule: the tf.Module whose signatures the SavedModel exports
  limits             ServingLimits: the bounds on one request, fixed at export time
  warmup             TF Serving's warmup requests of an export (PredictionLog records)
  server_config      TF Serving's models.config and batching_parameters.txt of an export

The command that exports a model directory (runners/export.py) is in `txl_tf/commands/`.
"""
