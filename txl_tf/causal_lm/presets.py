"""Presets of a causal language model: one directory a Keras user saves, copies and loads.

A preset directory holds

  config.json          the `TransformerXLConfig` (the same file as a model directory's)
  model.weights.h5     the backbone's weights (`keras.Model.save_weights`)
  preprocessor.json    `keras.saving.serialize_keras_object(preprocessor)`: it names the
                       preprocessor's module and class, so a reader imports them from the file
  vocab.txt,           the preprocessor's vocabulary and text rules (its `save_assets`; the
  corpus-info.json     same pair as a model directory's), text and JSON
  metadata.json        versions of txl_tf / TensorFlow / Keras, parameter count, the training
                       data and where the weights came from

`load_preset` also reads a txl-tf model directory (config.json and TF checkpoints, any
checkpoint: latest, best, ckpt-N); its vocab.txt and corpus-info.json are read by
`MODEL_DIR_PREPROCESSOR`, the registered Keras class that a preset's preprocessor.json names.

Example:
  >>> save_to_preset(causal_lm, "presets/tiny")
  >>> backbone, preprocessor = load_preset("presets/tiny")
  >>> backbone, preprocessor = load_preset("runs/default", checkpoint="best")
"""
import importlib
import json
import os
import platform
import types

import keras
import tensorflow as tf

import txl_tf
from txl_tf import model_files
from txl_tf.atomic_writes import atomic_directory, write_json_atomic
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.config import ConfigError
from txl_tf.error_text import one_line
from txl_tf.model import TransformerXL
from txl_tf.weight_counts import (ExtraWeightsError, check_no_extra_weights,
                                  keras_file_weights)

CONFIG_FILE = model_files.CONFIG_FILE
WEIGHTS_FILE = "model.weights.h5"
PREPROCESSOR_FILE = "preprocessor.json"
METADATA_FILE = "metadata.json"
VOCAB_FILES = ("vocab.txt", "corpus-info.json")
PRESET_FILES = (CONFIG_FILE, WEIGHTS_FILE, PREPROCESSOR_FILE, METADATA_FILE) + VOCAB_FILES

# The preprocessor of a model directory's vocab.txt and corpus-info.json: what a preset's
# preprocessor.json holds for it. Data, not an import: the module is imported by name when a
# model directory with a vocabulary is loaded (txl_tf does not depend on tf_records).
MODEL_DIR_PREPROCESSOR = {"module": "tf_records.causal_lm_preprocessor",
                          "class_name": "CausalLMPreprocessor",
                          "registered_name": "tf_records>CausalLMPreprocessor",
                          "config": {"name": "preprocessor"}}
# corpus-info.json fields that describe the training data in metadata.json
DATA_FIELDS = ("dataset", "level", "vocab_size", "num_tokens", "options", "data_dir")


def _built(backbone):
    """`backbone`, its weights created (a call of one token) when they were not."""
    if not backbone.built:
        backbone(tf.zeros([1, 1], tf.int32), mems=None, training=False)
    return backbone


def metadata(causal_lm, training_data=None, source=None) -> dict:
    """metadata.json: versions, parameter count, the training data and the weights' source."""
    pre = causal_lm.preprocessor
    info = pre.corpus_info if pre is not None else {}
    data = training_data if training_data is not None else {
        k: info[k] for k in DATA_FIELDS if k in info}
    return {"format": "txl-tf preset", "txl_tf_version": txl_tf.__version__,
            "tensorflow_version": tf.__version__, "keras_version": keras.__version__,
            "python_version": platform.python_version(),
            "parameter_count": int(_built(causal_lm.backbone).count_params()),
            "training_data": data, "source": source or {}}


def save_to_preset(causal_lm, preset_dir, training_data=None, source=None) -> str:
    """Writes `preset_dir` whole (a temporary directory renamed into place).

    Args:
      causal_lm: an object with `.backbone` (a `TransformerXL`) and `.preprocessor` (None or
        a Keras-serializable layer with `save_assets` / `load_assets`).
      preset_dir: the directory; an existing preset there is replaced, any other existing
        path is refused.
      training_data: dict describing the training data for metadata.json (default: the
        preprocessor's corpus-info fields `DATA_FIELDS`).
      source: dict naming where the weights came from (e.g. a model directory's checkpoint).

    Returns:
      The absolute path of the preset.

    Raises:
      CausalLMInputError: `preset_dir` is a file or a non-empty directory that is no preset.
    """
    path = os.path.abspath(os.fspath(preset_dir))
    if os.path.isfile(path) or (os.path.isdir(path) and os.listdir(path)
                                and not os.path.isfile(os.path.join(path, WEIGHTS_FILE))):
        raise CausalLMInputError(f"{preset_dir} exists and is not a preset; give a new or empty "
                                 "directory (an existing preset is replaced).")
    backbone = _built(causal_lm.backbone)
    meta = metadata(causal_lm, training_data, source)
    name = os.path.basename(path)
    with atomic_directory(path, f".{name}.tmp-{os.getpid()}",
                                      f".{name}.old-{os.getpid()}") as tmp:
        model_files.save_config(backbone.config, tmp)
        backbone.save_weights(os.path.join(tmp, WEIGHTS_FILE))
        if causal_lm.preprocessor is not None:
            spec = keras.saving.serialize_keras_object(causal_lm.preprocessor)
            write_json_atomic(os.path.join(tmp, PREPROCESSOR_FILE), spec)
            causal_lm.preprocessor.save_assets(tmp)
        write_json_atomic(os.path.join(tmp, METADATA_FILE), meta)
    return path


def deserialize_preprocessor(spec: dict, assets_dir: str):
    """The preprocessor a serialized config describes, its assets read from `assets_dir`.

    The module the config names is imported first (Keras finds only registered classes).
    """
    if not isinstance(spec, dict) or not isinstance(spec.get("module"), str):
        raise CausalLMInputError(f"{PREPROCESSOR_FILE} in {assets_dir} is not a serialized "
                                 "Keras object (no 'module'); save the preset again.")
    try:
        importlib.import_module(spec["module"])
    except ImportError as error:
        raise CausalLMInputError(f"the preprocessor's module {spec['module']} cannot be "
                                 f"imported ({error}); install it or pass preprocessor=.") from None
    preprocessor = keras.saving.deserialize_keras_object(spec)
    preprocessor.load_assets(assets_dir)
    return preprocessor


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise CausalLMInputError(f"{path} cannot be read as JSON ({error}); save the preset "
                                 "again.") from None


def find_preprocessor(directory):
    """The preprocessor of a preset or model directory: its preprocessor.json, else
    `MODEL_DIR_PREPROCESSOR` for a vocab.txt + corpus-info.json; None without a vocabulary."""
    spec_path = os.path.join(directory, PREPROCESSOR_FILE)
    if os.path.isfile(spec_path):
        return deserialize_preprocessor(_read_json(spec_path), directory)
    if all(os.path.isfile(os.path.join(directory, f)) for f in VOCAB_FILES):
        return deserialize_preprocessor(MODEL_DIR_PREPROCESSOR, directory)
    return None


def _load_backbone(preset, checkpoint):
    """The backbone of a preset (its weights file) or of a model directory (a checkpoint)."""
    try:
        if os.path.isfile(os.path.join(preset, WEIGHTS_FILE)):
            if checkpoint not in (None, model_files.LATEST):
                raise CausalLMInputError(f"{preset} is a preset (one set of weights); "
                                         f"checkpoint={checkpoint!r} applies to model "
                                         "directories only: leave it out.")
            backbone = _built(TransformerXL(model_files.load_config(preset)))
            weights = os.path.join(preset, WEIGHTS_FILE)
            backbone.load_weights(weights)
            check_no_extra_weights(keras_file_weights(weights), backbone, weights,
                                   os.path.join(preset, CONFIG_FILE))
            return backbone
        return model_files.load_model(preset, checkpoint)
    except (model_files.ModelDirError, ConfigError, ExtraWeightsError) as error:
        raise CausalLMInputError(f"cannot load {preset}: {error}") from None
    except (ValueError, OSError, tf.errors.OpError) as error:
        if isinstance(error, CausalLMInputError):
            raise
        message = one_line(getattr(error, "message", None) or str(error))
        raise CausalLMInputError(f"cannot read the weights of {preset} ({message}); save the "
                                 "preset again.") from None


def _check_vocab_checksum(preset, preprocessor):
    """A preprocessor given for a directory that records its own vocabulary's checksum (its
    corpus-info.json) must have that vocabulary: one of the same size from another corpus
    would read every id as another symbol."""
    path = os.path.join(preset, "corpus-info.json")
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f).get("vocab_checksum")
        given = preprocessor.model_vocab.vocab.checksum()
    except (OSError, ValueError, AttributeError):
        return  # no readable record, or a preprocessor without a vocabulary yet
    if recorded is not None and recorded != given:
        raise CausalLMInputError(
            f"the preprocessor's vocabulary has checksum {given} but {preset} was trained with "
            f"{recorded} ({path}); use the vocabulary it was trained with.")


def load_preset(preset, checkpoint=model_files.LATEST, preprocessor=None):
    """(backbone, preprocessor) of a preset or a txl-tf model directory.

    Args:
      preset: a preset directory (`save_to_preset`) or a model directory (config.json and
        checkpoints: runners/train.py, runners/import_weights.py, `txl_tf.save_model`).
      checkpoint: for a model directory: "latest", "best", "ckpt-N" or a path prefix.
      preprocessor: used instead of the directory's (e.g. for a directory without one).

    Returns:
      (`TransformerXL`, the preprocessor or None when the directory has no vocabulary).

    Raises:
      CausalLMInputError: not a preset nor a model directory, no such checkpoint, unreadable
        files, or a vocabulary of another size than the model's.
    """
    preset = os.fspath(preset)
    if not os.path.isdir(preset):
        raise CausalLMInputError(f"{preset} is not a directory; give a preset "
                                 "(save_to_preset) or a txl-tf model directory.")
    if not os.path.isfile(os.path.join(preset, CONFIG_FILE)):
        raise CausalLMInputError(f"{preset} has no {CONFIG_FILE}: it is neither a preset "
                                 "(save_to_preset) nor a txl-tf model directory.")
    backbone = _load_backbone(preset, checkpoint)
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
        _check_vocab_checksum(preset, preprocessor)
    return backbone, preprocessor


def model_dir_source(model_dir, checkpoint=model_files.LATEST) -> dict:
    """metadata.json's `source` for weights read from a model directory: the checkpoint and
    what train_summary.json or import.json record."""
    choice = model_files.choose_checkpoint(model_dir, checkpoint)
    source = {"model_dir": os.path.abspath(model_dir), **choice.to_json()}
    for name in ("train_summary.json", "import.json"):
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            source[os.path.splitext(name)[0]] = _read_json(path)
    return source


def preset_from_model_dir(model_dir, preset_dir, checkpoint=model_files.LATEST,
                          preprocessor=None) -> str:
    """Writes a preset of a model directory (trained, or imported from the authors' TF1
    checkpoints or Hugging Face weights by runners/import_weights.py); returns its path."""
    backbone, preprocessor = load_preset(model_dir, checkpoint, preprocessor)
    return save_to_preset(types.SimpleNamespace(backbone=backbone, preprocessor=preprocessor),
                          preset_dir, source=model_dir_source(model_dir, checkpoint))

