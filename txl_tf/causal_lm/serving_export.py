"""`export(causal_lm, export_dir, ...)`: the SavedModel of runners/export.py, for TF Serving.

The backbone in memory is exported by `txl_tf.serving.saved_model_writer.export_built_model`,
the SavedModel writer under runners/export.py: the same signatures, limits, warmup requests and
server configuration, written atomically as EXPORT_DIR/VERSION; the export info's checkpoint
fields are null (the weights come from no checkpoint). The text signatures need the
preprocessor and the tensorflow_text ops; without a preprocessor only the id signatures are
written.

Example:
  >>> info = export(causal_lm, "/models/txl", gen_mem_len=1600)
  >>> info["export_path"]
  '/models/txl/1'
"""
import dataclasses
import os
import tempfile

import keras

from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.serving.export_options import ExportInputError, ExportOptions
from txl_tf.serving.limits import ServingLimits
from txl_tf.serving.saved_model_writer import export_built_model

# the export info's checkpoint fields: the weights are the model's own, from no checkpoint
NO_CHECKPOINT = {"checkpoint": None, "checkpoint_name": None, "checkpoint_step": None}
# ExportOptions fields that `export` takes as keyword arguments (the rest it sets itself)
SETTINGS = tuple(f.name for f in dataclasses.fields(ExportOptions)
                 if f.name not in ("model_dir", "export_dir", "checkpoint"))


def _vocabulary(preprocessor, directory, text_signatures) -> tuple:
    """(vocab.txt, in-graph codec or None) of a copy of `preprocessor` written to
    `directory`."""
    copy = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(preprocessor))
    preprocessor.save_assets(directory)
    copy.load_assets(directory)
    return copy.vocabulary_file, copy.graph_text() if text_signatures else None


def export(causal_lm, export_dir, limits=None, **settings) -> dict:
    """Writes EXPORT_DIR/VERSION as runners/export.py does.

    Args:
      causal_lm: an object with `.backbone` (a `TransformerXL`) and `.preprocessor` (None or
        a Keras-serializable layer with `save_assets`, `load_assets`, `vocabulary_file` and
        `graph_text`, e.g. `tf_records.causal_lm_preprocessor.CausalLMPreprocessor`).
      export_dir: the base directory of the versions.
      limits: the `ServingLimits` of every request (default: its defaults).
      **settings: `ExportOptions` fields (export.py's flags): version, overwrite, tgt_len,
        mem_len, clamp_len, same_length, gen_mem_len, gen_seg_len, text_signatures (default:
        True with a preprocessor, else False), warmup_requests.

    Returns:
      The dict export.py prints ({"export_path", "version", "signatures", ...}).

    Raises:
      CausalLMInputError: an unknown setting, or text signatures without a preprocessor.
      ExportInputError: a bad setting or path. ExportRuntimeError: writing failed.
    """
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise CausalLMInputError(f"unknown export setting(s) {', '.join(unknown)}; use "
                                 f"{', '.join(SETTINGS)}.")
    preprocessor = causal_lm.preprocessor
    settings.setdefault("text_signatures", preprocessor is not None)
    if settings["text_signatures"] and preprocessor is None:
        raise CausalLMInputError("text_signatures=True needs a preprocessor (the vocabulary); "
                                 "give the model one or pass text_signatures=False.")
    if limits is not None and not isinstance(limits, ServingLimits):
        raise CausalLMInputError(f"limits must be a txl_tf ServingLimits, got "
                                 f"{type(limits).__name__}.")
    if not export_dir:
        raise ExportInputError("export_dir is required: the directory of the versions.")
    options = ExportOptions(model_dir="", export_dir=os.fspath(export_dir), **settings)
    # The vocabulary files are copied into the export; this directory is not kept.
    with tempfile.TemporaryDirectory(prefix="txl-causal-lm-") as assets:
        vocab_file, codec = (None, None) if preprocessor is None else _vocabulary(
            preprocessor, assets, settings["text_signatures"])
        return export_built_model(causal_lm.backbone, options, limits, vocab_file, codec,
                                  source=NO_CHECKPOINT)
