"""The library half of every command: its options and the one call its runner makes.

  module             options module (TensorFlow-free)  the call
  train              train_options                     train(options, template, data)
  evaluate           evaluate_options                  evaluate_model(options, data)
  generate           generate_options                  generate_text(options, data, out)
  export             (txl_tf/serving/export_options)   export_model(options, limits, data)
  recl               recl_options                      measure_recl(models, tokens, options)
  ablation           ablation_options                  run_ablation(options, train_options,
                                                                    template, data)
  import_weights     import_weights_options            import_into_model_dir(options,
                                                                              vocabulary)
  inference_model    the model of a chosen checkpoint with dropout off (evaluate, generate,
                     export)

`train` assembles its run from the parts in `txl_tf/training/` (placement, the run record with
its resume checks and warm start, the actions, reporting).

`template` is a `txl_tf.model.config_template.ConfigTemplate` (the model configuration whose
vocabulary is the data's) and `data` an object of the seam `txl_tf/model/data_interfaces.py`
describes (`tf_records.model_data.ModelData`, or `tf_records.PreparedData` for training): the
runners pass them in, the library never calls back into runner code (docs/library.md, "The
model/data seam").

The names are loaded on first use (see `txl_tf/__init__.py`): the options come without
TensorFlow, the calls import it. `train` is imported from its module
(`from txl_tf.commands.train import train`): the package attribute `train` is the module.
"""
from txl_tf.runtime.lazy_exports import lazy_exports

_EXPORTS = {
    "AblationOptions": "txl_tf.commands.ablation_options",
    "EvalInputError": "txl_tf.commands.evaluate_options",
    "EvalOptions": "txl_tf.commands.evaluate_options",
    "ExportInputError": "txl_tf.serving.export_options",
    "ExportOptions": "txl_tf.serving.export_options",
    "ExportRuntimeError": "txl_tf.serving.export_options",
    "GenerateInputError": "txl_tf.commands.generate_options",
    "GenerateOptions": "txl_tf.commands.generate_options",
    "ImportOptions": "txl_tf.commands.import_weights_options",
    "PRECISIONS": "txl_tf.commands.train_options",
    "ReclOptions": "txl_tf.commands.recl_options",
    "TrainError": "txl_tf.commands.train_options",
    "TrainOptions": "txl_tf.commands.train_options",
    "evaluate_model": "txl_tf.commands.evaluate",
    "export_model": "txl_tf.commands.export",
    "format_table": "txl_tf.commands.ablation",
    "generate_text": "txl_tf.commands.generate",
    "measure_recl": "txl_tf.commands.recl",
    "run_ablation": "txl_tf.commands.ablation",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
