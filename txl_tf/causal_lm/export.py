"""`export(causal_lm, export_dir, ...)`: the SavedModel of runners/export.py, for TF Serving.

The backbone and the preprocessor's vocabulary are written as a model directory into a
temporary directory, and `txl_tf.commands.export.export_model` (what
runners/export.py calls) exports it: the same signatures, limits, warmup requests and server
configuration, written atomically as EXPORT_DIR/VERSION. The text signatures need the
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
import types

import keras

from txl_tf import model_files
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.commands.export import export_model
from txl_tf.commands.export_options import ExportInputError, ExportOptions
from txl_tf.inference.serving_limits import ServingLimits

# ExportOptions fields that `export` takes as keyword arguments (the rest it sets itself)
SETTINGS = tuple(f.name for f in dataclasses.fields(ExportOptions)
                 if f.name not in ("model_dir", "export_dir", "checkpoint"))


class _PreprocessorText:
    """The `TextData` (`txl_tf/model_text.py`) that `export_model` asks for the vocabulary: the
    preprocessor's copy written into the temporary model directory."""

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor

    def has_vocabulary(self, model_dir) -> bool:
        return True

    def model_text(self, model_dir, vocab_size, vocab_file=None):
        copy = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(self.preprocessor))
        copy.load_assets(model_dir)
        return types.SimpleNamespace(vocab_path=copy.vocabulary_file,
                                     graph_codec=copy.graph_text)


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
    # Not kept: removed when the export is written (export_model copies what it needs).
    with tempfile.TemporaryDirectory(prefix="txl-causal-lm-") as model_dir:
        model_files.save_model(causal_lm.backbone, model_dir)
        if preprocessor is not None:
            preprocessor.save_assets(model_dir)
        options = ExportOptions(model_dir=model_dir, export_dir=os.fspath(export_dir),
                                **settings)
        return export_model(options, limits,
                            None if preprocessor is None else _PreprocessorText(preprocessor))
