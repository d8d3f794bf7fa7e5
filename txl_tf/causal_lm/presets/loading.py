"""Loading a preset or a txl-tf model directory: its backbone and preprocessor.

A model directory (config.json and TF checkpoints, any checkpoint: latest, best, ckpt-N) loads
as a preset does; its vocab.txt and corpus-info.json are read by `MODEL_DIR_PREPROCESSOR`, the
registered Keras class that a preset's preprocessor.json names. Every JSON file is read as a
file from elsewhere (`untrusted_files.reading`).

Example:
  >>> backbone, preprocessor = load_preset("presets/tiny")
  >>> backbone, preprocessor = load_preset("runs/default", checkpoint="best")
"""
import os

import tensorflow as tf

from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.causal_lm.presets.metadata_file import QUANTIZATION_FIELD
from txl_tf.causal_lm.presets.preprocessor_classes import (MODEL_DIR_PREPROCESSOR,
                                                           deserialize_preprocessor)
from txl_tf.causal_lm.presets.preprocessor_check import check_vocab_checksum
from txl_tf.causal_lm.presets.weight_bytes import built
from txl_tf.causal_lm.presets.writing import recover_preset
from txl_tf.model.config import ConfigError
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.runtime.error_text import one_line
from txl_tf.storage import model_files
from txl_tf.storage.model_dir_layout import (CONFIG_FILE, PRESET_METADATA_FILE,
                                             PRESET_PREPROCESSOR_FILE, PRESET_WEIGHTS_FILE,
                                             VOCAB_FILES)
from txl_tf.storage.text_files import check_utf8_path
from txl_tf.storage.weight_counts import (ExtraWeightsError, check_no_extra_weights,
                                          check_weights_file, keras_file_weights)
from untrusted_files import reading


def read_json(path):
    """The JSON value of a preset's (or model directory's) file, read as a file from elsewhere:
    inside its directory, bounded, UTF-8, nesting bounded (`untrusted_files.reading`); its
    errors as one `CausalLMInputError`."""
    try:
        return reading.read_json(path, inside=os.path.dirname(os.path.abspath(path)),
                                 fix="save the preset again")
    except (OSError, reading.UntrustedFileError) as error:
        reason = (error.strerror if isinstance(error, OSError) else
                  str(error).replace(f"{path} ", "", 1).rsplit("; ", 1)[0])
        raise CausalLMInputError(f"{path} cannot be read as UTF-8 JSON ({reason}); save the "
                                 "preset again.") from None


def find_preprocessor(directory):
    """The preprocessor of a preset or model directory: its preprocessor.json, else
    `MODEL_DIR_PREPROCESSOR` for a vocab.txt + corpus-info.json; None without a vocabulary."""
    spec_path = os.path.join(directory, PRESET_PREPROCESSOR_FILE)
    if os.path.lexists(spec_path):
        return deserialize_preprocessor(read_json(spec_path), directory)
    if all(os.path.lexists(os.path.join(directory, f)) for f in VOCAB_FILES):
        return deserialize_preprocessor(MODEL_DIR_PREPROCESSOR, directory)
    return None


def _quantization_of(preset):
    """metadata.json's `QUANTIZATION_FIELD` (None: float weights, or no metadata.json)."""
    path = os.path.join(preset, PRESET_METADATA_FILE)
    meta = read_json(path) if os.path.isfile(path) else {}
    return meta.get(QUANTIZATION_FIELD) if isinstance(meta, dict) else None


def _preset_backbone(preset, checkpoint):
    """The backbone of a preset: its config.json's model, quantized as metadata.json says,
    with the weights of its model.weights.h5 (checked to fit the model both ways)."""
    if checkpoint not in (None, model_files.LATEST):
        raise CausalLMInputError(f"{preset} is a preset (one set of weights); "
                                 f"checkpoint={checkpoint!r} applies to model "
                                 "directories only: leave it out.")
    backbone = built(TransformerXL(model_files.load_config(preset)))
    mode = _quantization_of(preset)
    if mode is not None:
        backbone.quantize(mode)
    weights = os.path.join(preset, PRESET_WEIGHTS_FILE)
    config = os.path.join(preset, CONFIG_FILE)
    check_weights_file(weights, backbone, preset, config)
    backbone.load_weights(weights)
    check_no_extra_weights(keras_file_weights(weights), backbone, weights, config)
    return backbone


def _load_backbone(preset, checkpoint, load_weights=True):
    """The backbone of a preset (its weights file) or of a model directory (a checkpoint);
    without `load_weights`, its config.json's model with fresh weights."""
    try:
        if not load_weights:
            return built(TransformerXL(model_files.load_config(preset)))
        if os.path.lexists(os.path.join(preset, PRESET_WEIGHTS_FILE)):
            return _preset_backbone(preset, checkpoint)
        return model_files.load_model(preset, checkpoint)
    except (model_files.ModelDirError, ConfigError, ExtraWeightsError) as error:
        raise CausalLMInputError(f"cannot load {preset}: {error}") from None
    except (ValueError, OSError, tf.errors.OpError) as error:
        if isinstance(error, CausalLMInputError):
            raise
        message = one_line(getattr(error, "message", None) or str(error))
        raise CausalLMInputError(f"cannot read the weights of {preset} ({message}); save the "
                                 "preset again.") from None


def _check_directory(preset):
    """The preset path (UTF-8), a killed replacement recovered first; `CausalLMInputError`
    when it is not a directory with a config.json."""
    preset = check_utf8_path(preset, "preset", CausalLMInputError)
    if not os.path.isdir(preset):
        recover_preset(preset)  # a replacement killed between its renames
    if not os.path.isdir(preset):
        raise CausalLMInputError(f"{preset} is not a directory; give a preset "
                                 "(save_to_preset) or a txl-tf model directory.")
    if not os.path.lexists(os.path.join(preset, CONFIG_FILE)):
        raise CausalLMInputError(f"{preset} has no {CONFIG_FILE}: it is neither a preset "
                                 "(save_to_preset) nor a txl-tf model directory.")
    return preset


def load_preset(preset, checkpoint=model_files.LATEST, preprocessor=None, load_weights=True):
    """(backbone, preprocessor) of a preset or a txl-tf model directory.

    Args:
      preset: a preset directory (`save_to_preset`) or a model directory (config.json and
        checkpoints: runners/train.py, runners/import_weights.py, `txl_tf.save_model`).
      checkpoint: for a model directory: "latest", "best", "ckpt-N" or a path prefix.
      preprocessor: used instead of the directory's (e.g. for a directory without one).
      load_weights: False builds the model of config.json untrained (fresh weights, as
        keras-hub's from_preset(load_weights=False)); no weights file or checkpoint is read.

    Returns:
      (`TransformerXL`, the preprocessor or None when the directory has no vocabulary).

    Raises:
      CausalLMInputError: not a preset nor a model directory, no such checkpoint, unreadable
        files, or a vocabulary of another size than the model's.
    """
    if not isinstance(load_weights, bool):
        raise CausalLMInputError(f"load_weights must be True or False, got {load_weights!r}.")
    if not load_weights and checkpoint not in (None, model_files.LATEST):
        raise CausalLMInputError(f"checkpoint={checkpoint!r} names weights but "
                                 "load_weights=False reads none; leave one of them out.")
    preset = _check_directory(preset)
    backbone = _load_backbone(preset, checkpoint, load_weights)
    given = preprocessor is not None
    if not given:
        try:
            preprocessor = find_preprocessor(preset)
        except ValueError as error:  # the vocabulary's own errors are ValueErrors
            if isinstance(error, CausalLMInputError):
                raise
            raise CausalLMInputError(f"cannot read the vocabulary of {preset}: {error}") from None
    if preprocessor is not None and preprocessor.vocabulary_size != backbone.config.n_token:
        raise CausalLMInputError(
            f"the preprocessor has {preprocessor.vocabulary_size} symbols but the model has "
            f"n_token={backbone.config.n_token}; use the vocabulary it was trained with.")
    if given:
        check_vocab_checksum(preset, preprocessor)
    return backbone, preprocessor
