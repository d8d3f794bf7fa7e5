"""Writing a preset safely, and recovering one whose replacement was killed.

Replacing a preset swaps whole directories (`.NAME.tmp-PID` written, the old one renamed to
`.NAME.old-PID`, the new one renamed into place); a writer killed between the two renames
leaves the old preset under its `.old` name, which the next load or save of NAME renames back
(`recover_preset`). Files in the directory that are not the preset's own are never deleted: a
directory holding any is refused.

Example:
  >>> save_to_preset(causal_lm, "presets/tiny")
  '/home/me/presets/tiny'
"""
import os

import keras
import tensorflow as tf

from txl_tf.causal_lm.errors import CausalLMInputError, CausalLMRuntimeError
from txl_tf.causal_lm.presets.metadata_file import metadata
from txl_tf.causal_lm.presets.weight_bytes import built, weights_file_bytes
from txl_tf.runtime.error_text import first_line, is_disk_full
from txl_tf.storage import model_files
from txl_tf.storage.atomic_writes import (atomic_directory, recover_directory, swap_names,
                                          write_json_atomic)
from txl_tf.storage.model_dir_layout import (CONFIG_FILE, PRESET_FILES, PRESET_METADATA_FILE,
                                             PRESET_PREPROCESSOR_FILE, PRESET_WEIGHTS_FILE)
from untrusted_files import dir_kinds


def check_target(path: str, preset_dir) -> None:
    """Refuses a `preset_dir` whose replacement would lose something: a file, a link, or a
    directory holding anything but a preset's own files (`CausalLMInputError`)."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        raise CausalLMInputError(f"{preset_dir} exists and is not a preset directory (a file or "
                                 "a link); give a new or empty directory (an existing preset "
                                 "is replaced).")
    dir_kinds.check_kind(path, dir_kinds.PRESET, str(preset_dir), CausalLMInputError)
    entries = sorted(os.listdir(path)) if os.path.isdir(path) else []
    if not entries:
        return
    foreign = [e for e in entries if e not in PRESET_FILES]
    if PRESET_WEIGHTS_FILE not in entries or CONFIG_FILE not in entries:
        raise CausalLMInputError(f"{preset_dir} exists and is not a preset (no "
                                 f"{PRESET_WEIGHTS_FILE} and {CONFIG_FILE}); give a new or "
                                 "empty directory (an existing preset is replaced).")
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


def _write_preset(causal_lm, path, backbone, meta) -> None:
    """Writes the preset's files into a new directory swapped in as `path`."""
    with atomic_directory(path, *swap_names(path)) as tmp:
        model_files.save_config(backbone.config, tmp)
        with open(os.path.join(tmp, PRESET_WEIGHTS_FILE), "xb") as f:
            f.write(weights_file_bytes(backbone))
        if causal_lm.preprocessor is not None:
            spec = keras.saving.serialize_keras_object(causal_lm.preprocessor)
            write_json_atomic(os.path.join(tmp, PRESET_PREPROCESSOR_FILE), spec)
            causal_lm.preprocessor.save_assets(tmp)
        write_json_atomic(os.path.join(tmp, PRESET_METADATA_FILE), meta)


def save_to_preset(causal_lm, preset_dir, training_data=None, source=None) -> str:
    """Writes `preset_dir` whole (a temporary directory swapped in by two renames; a save
    killed between them is undone by the next load or save, `recover_preset`).

    Args:
      causal_lm: an object with `.backbone` (a `TransformerXL`) and `.preprocessor` (None or
        a Keras-serializable layer with `save_assets` / `load_assets`).
      preset_dir: the directory; an existing preset there is replaced, any other existing
        path (a file, a link, a directory holding other files) is refused.
      training_data: dict describing the training data for metadata.json (default: the
        preprocessor's corpus-info fields `metadata_file.DATA_FIELDS`).
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
    check_target(path, preset_dir)
    backbone = built(causal_lm.backbone)
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
