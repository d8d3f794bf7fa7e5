"""Presets of a causal language model: one directory a Keras user saves, copies and loads.

A preset directory holds

  config.json          the `TransformerXLConfig` (the same file as a model directory's)
  model.weights.h5     the backbone's weights (the file of `keras.Model.save_weights`, built
                       in memory: `weights_file_bytes`)
  preprocessor.json    `keras.saving.serialize_keras_object(preprocessor)`: it names the
                       preprocessor's module and class, which a reader looks up in a fixed
                       table of txl-tf's own classes (`PREPROCESSOR_CLASSES`): a preset is
                       data from others, and nothing its files name is imported or run
  vocab.txt,           the preprocessor's vocabulary and text rules (its `save_assets`; the
  corpus-info.json     same pair as a model directory's), text and JSON
  metadata.json        versions of txl_tf / TensorFlow / Keras, parameter count, the training
                       data and where the weights came from

`load_preset` also reads a txl-tf model directory (config.json and TF checkpoints, any
checkpoint: latest, best, ckpt-N); its vocab.txt and corpus-info.json are read by
`MODEL_DIR_PREPROCESSOR`, the registered Keras class that a preset's preprocessor.json names.

Replacing a preset swaps whole directories (`.NAME.tmp-PID` written, the old one renamed to
`.NAME.old-PID`, the new one renamed into place); a writer killed between the two renames
leaves the old preset under its `.old` name, which the next load or save of NAME renames back
(`recover_preset`). Files in the directory that are not the preset's own are never deleted: a
directory holding any is refused.

Example:
  >>> save_to_preset(causal_lm, "presets/tiny")
  >>> backbone, preprocessor = load_preset("presets/tiny")
  >>> backbone, preprocessor = load_preset("runs/default", checkpoint="best")
"""
import importlib
import io
import os
import platform
import types

import keras
import tensorflow as tf
from keras.src.saving import saving_lib  # the HDF5 store of save_weights: weights_file_bytes

from txl_tf.storage import model_dir_layout as layout
from txl_tf.storage import model_files
from txl_tf.storage.atomic_writes import (atomic_directory, recover_directory, swap_names,
                                  write_json_atomic)
from txl_tf.causal_lm.errors import CausalLMInputError, CausalLMRuntimeError
from txl_tf.model.config import ConfigError
from txl_tf.runtime.error_text import first_line, is_disk_full, one_line
from txl_tf.model.quantization import quantization_mode
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.storage.text_files import check_utf8_path
from txl_tf.runtime.version import __version__ as txl_tf_version
from txl_tf.storage.weight_counts import (ExtraWeightsError, check_no_extra_weights,
                                  check_weights_file, keras_file_weights)
from untrusted_files import dir_kinds, reading

CONFIG_FILE = layout.CONFIG_FILE
WEIGHTS_FILE = layout.PRESET_WEIGHTS_FILE
PREPROCESSOR_FILE = layout.PRESET_PREPROCESSOR_FILE
METADATA_FILE = layout.PRESET_METADATA_FILE
VOCAB_FILES = layout.VOCAB_FILES
PRESET_FILES = layout.PRESET_FILES

# The preprocessor of a model directory's vocab.txt and corpus-info.json: what a preset's
# preprocessor.json holds for it. Data, not an import: its module is imported (from
# PREPROCESSOR_CLASSES) when a directory with a vocabulary is loaded (txl_tf does not depend
# on tf_records).
MODEL_DIR_PREPROCESSOR = {"module": "tf_records.causal_lm_preprocessor",
                          "class_name": "CausalLMPreprocessor",
                          "registered_name": "tf_records>CausalLMPreprocessor",
                          "config": {"name": "preprocessor"}}
# The only preprocessor classes a preprocessor.json may name: (module, class name) -> the
# registered Keras name. Modules are imported by these constant names, never by a file's.
PREPROCESSOR_CLASSES = {
    (MODEL_DIR_PREPROCESSOR["module"], MODEL_DIR_PREPROCESSOR["class_name"]):
        MODEL_DIR_PREPROCESSOR["registered_name"],
}
# corpus-info.json fields that describe the training data in metadata.json
# metadata.json's field naming the quantization of the weights file ("int8"; absent: float)
QUANTIZATION_FIELD = "quantization"
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
    meta = {"format": "txl-tf preset", "txl_tf_version": txl_tf_version,
            "tensorflow_version": tf.__version__, "keras_version": keras.__version__,
            "python_version": platform.python_version(),
            "parameter_count": int(_built(causal_lm.backbone).count_params()),
            "training_data": data, "source": source or {}}
    mode = quantization_mode(causal_lm.backbone)
    if mode is not None:
        meta[QUANTIZATION_FIELD] = mode  # the loader quantizes the model before reading weights
    return meta


def _check_target(path: str, preset_dir) -> None:
    """Refuses a `preset_dir` whose replacement would lose something: a file, a link, or a
    directory holding anything but a preset's own files."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        raise CausalLMInputError(f"{preset_dir} exists and is not a preset directory (a file or "
                                 "a link); give a new or empty directory (an existing preset "
                                 "is replaced).")
    dir_kinds.check_kind(path, dir_kinds.PRESET, str(preset_dir), CausalLMInputError)
    entries = sorted(os.listdir(path)) if os.path.isdir(path) else []
    if not entries:
        return
    foreign = [e for e in entries if e not in PRESET_FILES]
    if WEIGHTS_FILE not in entries or CONFIG_FILE not in entries:
        raise CausalLMInputError(f"{preset_dir} exists and is not a preset (no {WEIGHTS_FILE} "
                                 f"and {CONFIG_FILE}); give a new or empty directory (an "
                                 "existing preset is replaced).")
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise CausalLMInputError(f"{preset_dir} holds files that are not the preset's ({shown}) "
                                 "and replacing the preset replaces the directory: move them "
                                 "out of it, or save to another directory.")


def recover_preset(preset_dir) -> None:
    """Restores a preset whose replacement was killed between its two renames (the previous
    preset, complete, under `.NAME.old-PID`) and deletes other leftovers of killed writers.

    Raises:
      CausalLMRuntimeError: a leftover cannot be renamed back or listed.
    """
    path = os.path.abspath(os.fspath(preset_dir))
    try:
        recover_directory(path)
    except OSError as error:
        raise CausalLMRuntimeError(
            f"cannot restore the preset {preset_dir} left by a killed save ({error.strerror}): "
            f"rename the newest {os.path.dirname(path)}/.{os.path.basename(path)}.old-* to "
            f"{os.path.basename(path)} yourself, or make the directory writable.") from None


def weights_file_bytes(backbone) -> bytes:
    """The bytes of `backbone.save_weights("model.weights.h5")`, made in memory.

    HDF5 crashes the process (a segmentation fault in `h5py.File.close`) when the disk fills
    while it writes, and `save_weights` takes only a path; so the file is built in memory with
    Keras' own HDF5 store and written by Python, whose failure is an `OSError`.
    """
    buffer = io.BytesIO()
    store = saving_lib.H5IOStore(buffer, mode="w")
    try:
        saving_lib._save_state(backbone, weights_store=store, assets_store=None,  # noqa: SLF001
                               inner_path="", visited_saveables=set())
    finally:
        store.close()
    return buffer.getvalue()


def _write_preset(causal_lm, path, backbone, meta) -> None:
    """Writes the preset's files into a new directory swapped in as `path`."""
    with atomic_directory(path, *swap_names(path)) as tmp:
        model_files.save_config(backbone.config, tmp)
        with open(os.path.join(tmp, WEIGHTS_FILE), "xb") as f:
            f.write(weights_file_bytes(backbone))
        if causal_lm.preprocessor is not None:
            spec = keras.saving.serialize_keras_object(causal_lm.preprocessor)
            write_json_atomic(os.path.join(tmp, PREPROCESSOR_FILE), spec)
            causal_lm.preprocessor.save_assets(tmp)
        write_json_atomic(os.path.join(tmp, METADATA_FILE), meta)


def save_to_preset(causal_lm, preset_dir, training_data=None, source=None) -> str:
    """Writes `preset_dir` whole (a temporary directory swapped in by two renames; a save
    killed between them is undone by the next load or save, `recover_preset`).

    Args:
      causal_lm: an object with `.backbone` (a `TransformerXL`) and `.preprocessor` (None or
        a Keras-serializable layer with `save_assets` / `load_assets`).
      preset_dir: the directory; an existing preset there is replaced, any other existing
        path (a file, a link, a directory holding other files) is refused.
      training_data: dict describing the training data for metadata.json (default: the
        preprocessor's corpus-info fields `DATA_FIELDS`).
      source: dict naming where the weights came from (e.g. a model directory's checkpoint).

    Returns:
      The absolute path of the preset.

    Raises:
      CausalLMInputError: `preset_dir` is a file, a link or a directory holding anything but
        a preset's files.
      CausalLMRuntimeError: writing failed (no space left, read-only); the previous preset is
        intact and no temporary is left.
    """
    path = os.path.abspath(os.fspath(preset_dir))
    recover_preset(path)
    _check_target(path, preset_dir)
    backbone = _built(causal_lm.backbone)
    meta = metadata(causal_lm, training_data, source)
    try:
        _write_preset(causal_lm, path, backbone, meta)
    except (OSError, RuntimeError, tf.errors.OpError) as error:
        reason = ("no space left on the device" if is_disk_full(error)
                  else first_line(error, 300))
        raise CausalLMRuntimeError(
            f"cannot write the preset {preset_dir} ({reason}); nothing was changed (an existing "
            "preset there is intact): free some space or choose a writable directory, then "
            "save again.") from None
    return path


def _preprocessor_class(spec, source: str):
    """The class `spec` names, looked up in `PREPROCESSOR_CLASSES` (nothing else is imported).

    Raises:
      CausalLMInputError: `spec` is not a serialized Keras object, or names another class.
    """
    fix = "save the preset again with txl-tf"
    if not isinstance(spec, dict):
        raise CausalLMInputError(f"{source} holds a JSON {type(spec).__name__}, not a "
                                 f"serialized Keras object; {fix}.")
    module, name = spec.get("module"), spec.get("class_name")
    if not isinstance(module, str) or not isinstance(name, str):
        raise CausalLMInputError(f"{source} is not a serialized Keras object (no 'module' and "
                                 f"'class_name' strings); {fix}.")
    registered = PREPROCESSOR_CLASSES.get((module, name))
    if registered is None or spec.get("registered_name", registered) != registered:
        allowed = ", ".join(f"{m}.{c}" for m, c in PREPROCESSOR_CLASSES)
        raise CausalLMInputError(
            f"{source} names the preprocessor {module[:80]!r}.{name[:80]!r}, which is not "
            f"txl-tf's ({allowed}); a preset runs no code it names: pass preprocessor= "
            "(your own, already imported) or save the preset with txl-tf's preprocessor.")
    return getattr(importlib.import_module(module), name)  # one of the table's modules


def deserialize_preprocessor(spec, assets_dir: str, source: str = None):
    """The preprocessor a serialized config describes, its assets read from `assets_dir`.

    Args:
      spec: the serialized config (preprocessor.json): module and class must be one of
        `PREPROCESSOR_CLASSES`; of its config only `name` and `trainable` are read.
      assets_dir: the directory of its vocab.txt and corpus-info.json.
      source: the file the spec came from, for messages (default: assets_dir's
        preprocessor.json).

    Raises:
      CausalLMInputError: a class outside `PREPROCESSOR_CLASSES` or a malformed spec.
    """
    source = source or os.path.join(assets_dir, PREPROCESSOR_FILE)
    cls = _preprocessor_class(spec, source)
    config = spec.get("config", {})
    if not isinstance(config, dict):
        raise CausalLMInputError(f"{source}: 'config' is a JSON {type(config).__name__}, not "
                                 "an object; save the preset again with txl-tf.")
    kwargs = {k: config[k] for k in ("name", "trainable") if k in config}
    if not isinstance(kwargs.get("name", ""), str) or not isinstance(
            kwargs.get("trainable", True), bool):
        raise CausalLMInputError(f"{source}: 'config' has a 'name' that is not a string or a "
                                 "'trainable' that is not true/false; save the preset again "
                                 "with txl-tf.")
    try:
        preprocessor = cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise CausalLMInputError(f"{source}: its 'config' is refused by {cls.__name__} "
                                 f"({first_line(error, 200)}); save the preset again "
                                 "with txl-tf.") from None
    preprocessor.load_assets(assets_dir)
    return preprocessor


def _read_json(path):
    """The JSON value of a preset's (or model directory's) file, read as a file from elsewhere:
    inside its directory, bounded, UTF-8, nesting bounded (`untrusted_files.reading`)."""
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
    spec_path = os.path.join(directory, PREPROCESSOR_FILE)
    if os.path.lexists(spec_path):
        return deserialize_preprocessor(_read_json(spec_path), directory)
    if all(os.path.lexists(os.path.join(directory, f)) for f in VOCAB_FILES):
        return deserialize_preprocessor(MODEL_DIR_PREPROCESSOR, directory)
    return None


def _load_backbone(preset, checkpoint, load_weights=True):
    """The backbone of a preset (its weights file) or of a model directory (a checkpoint);
    without `load_weights`, its config.json's model with fresh weights."""
    try:
        if not load_weights:
            return _built(TransformerXL(model_files.load_config(preset)))
        if os.path.lexists(os.path.join(preset, WEIGHTS_FILE)):
            if checkpoint not in (None, model_files.LATEST):
                raise CausalLMInputError(f"{preset} is a preset (one set of weights); "
                                         f"checkpoint={checkpoint!r} applies to model "
                                         "directories only: leave it out.")
            backbone = _built(TransformerXL(model_files.load_config(preset)))
            mode = _quantization_of(preset)
            if mode is not None:
                backbone.quantize(mode)
            weights = os.path.join(preset, WEIGHTS_FILE)
            check_weights_file(weights, backbone, preset, os.path.join(preset, CONFIG_FILE))
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


def _quantization_of(preset):
    """metadata.json's `QUANTIZATION_FIELD` (None: float weights, or no metadata.json)."""
    path = os.path.join(preset, METADATA_FILE)
    meta = _read_json(path) if os.path.isfile(path) else {}
    return meta.get(QUANTIZATION_FIELD) if isinstance(meta, dict) else None


def _check_vocab_checksum(preset, preprocessor):
    """A preprocessor given for a directory that records its own vocabulary's checksum (its
    corpus-info.json) must have that vocabulary (the preprocessor's `check_trained_with`, the
    one check of tf_records' vocabularies; a preprocessor of another kind is not checked)."""
    check = getattr(preprocessor, "check_trained_with", None)
    if check is None:
        return
    try:
        check(preset)
    except ValueError as error:  # the vocabulary's errors are ValueErrors
        raise CausalLMInputError(str(error)) from None


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
    preset = check_utf8_path(preset, "preset", CausalLMInputError)
    if not os.path.isdir(preset):
        recover_preset(preset)  # a replacement killed between its renames
    if not os.path.isdir(preset):
        raise CausalLMInputError(f"{preset} is not a directory; give a preset "
                                 "(save_to_preset) or a txl-tf model directory.")
    if not os.path.lexists(os.path.join(preset, CONFIG_FILE)):
        raise CausalLMInputError(f"{preset} has no {CONFIG_FILE}: it is neither a preset "
                                 "(save_to_preset) nor a txl-tf model directory.")
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
        _check_vocab_checksum(preset, preprocessor)
    return backbone, preprocessor


def model_dir_source(model_dir, checkpoint=model_files.LATEST) -> dict:
    """metadata.json's `source` for weights read from a model directory: the checkpoint and
    what train_summary.json or import.json record."""
    choice = model_files.choose_checkpoint(model_dir, checkpoint)
    source = {"model_dir": os.path.abspath(model_dir), **choice.to_json()}
    for name in (layout.TRAIN_SUMMARY_FILE, layout.IMPORT_FILE):
        path = os.path.join(model_dir, name)
        if os.path.lexists(path):
            source[os.path.splitext(name)[0]] = _read_json(path)
    return source


def preset_from_model_dir(model_dir, preset_dir, checkpoint=model_files.LATEST,
                          preprocessor=None) -> str:
    """Writes a preset of a model directory (trained, or imported from the authors' TF1
    checkpoints or Hugging Face weights by runners/import_weights.py); returns its path."""
    backbone, preprocessor = load_preset(model_dir, checkpoint, preprocessor)
    return save_to_preset(types.SimpleNamespace(backbone=backbone, preprocessor=preprocessor),
                          preset_dir, source=model_dir_source(model_dir, checkpoint))

