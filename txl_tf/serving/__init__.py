"""Serving: the SavedModel for TF Serving and everything written with it.

  signatures         one record per signature: input specs, method, warmup request, limits
  module             ServingModule: the tf.Module whose signatures the SavedModel exports
  limits             ServingLimits: the bounds on one request, fixed at export time
  serving_settings   ServingSettings: the run settings of scoring and generation (TF-free)
  request_checks     RequestChecks: every in-graph check of a request, before model work
  warmup             TF Serving's warmup requests of an export (PredictionLog records)
  server_config      TF Serving's models.config and batching_parameters.txt of an export
  saved_model_writer export_built_model: EXPORT_DIR/VERSION of a model in memory, atomically
  versions           an export directory's versions: reserved, swapped in, recovered
  export_options     ExportOptions and the export's error classes (TensorFlow-free)

The command that exports a model directory (runners/export.py) is `txl_tf/commands/export.py`;
the Keras model's `export_for_serving` is `txl_tf/causal_lm/serving_export.py`. Both call `export_built_model`.
"""
