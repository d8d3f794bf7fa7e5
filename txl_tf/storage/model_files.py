"""The files of a txl-tf model directory: saving, choosing and loading them.

What the directory holds, and every name in it, is `model_dir_layout`. This module reads and
writes the model's part: config.json and the TF checkpoints (checkpoint, ckpt-N.*) whose root
object has the model under the attribute `model`. Training checkpoints add the optimizer, step
and data position beside it; `load_model` reads the model part of whichever is newest (the one
the `checkpoint` state file names, or the highest ckpt-N.index when that file is unreadable); a
damaged one is a `CheckpointReadError` naming it. best/ is a training run's best checkpoint on
validation, itself a model directory (with best.json: step and valid_loss);
`load_model(model_dir, checkpoint="best")` reads it. Other files are ignored here.

Which checkpoint a reader takes (`choose_checkpoint`): "latest" (the default), "best", "ckpt-N"
(in model_dir, else in model_dir/best/), or a checkpoint path prefix.
"""
import dataclasses
import gc
import os
import re
from typing import Optional

import tensorflow as tf

from txl_tf.storage.atomic_writes import write_json_atomic
from txl_tf.storage.lora_record import apply_lora_record
from txl_tf.storage import checkpoint_probes
from txl_tf.storage import model_dir_layout as layout
from txl_tf.storage.model_dir_layout import (BEST_DIR, BEST_FILE, CONFIG_FILE,
                                             missing_config_message)
from txl_tf.storage.checkpoint_probes import checkpoint_files, is_damage_error, quiet_tf_warnings
from txl_tf.runtime.error_text import first_line
from txl_tf.model.config import ConfigError, TransformerXLConfig
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.storage.text_files import read_text_file
from untrusted_files import reading, schema
from txl_tf.storage.weight_counts import (ExtraWeightsError, check_no_extra_weights,
                                  checkpoint_model_weights)

LATEST, BEST = "latest", "best"
MAX_CONFIG_BYTES = reading.MAX_CONFIG_BYTES


class ModelDirError(FileNotFoundError):
    """A model directory that is missing, incomplete or does not fit its configuration."""


class CheckpointReadError(ModelDirError):
    """A checkpoint whose files are missing, truncated or not a TF checkpoint at all."""


def save_config(config: TransformerXLConfig, model_dir: str) -> str:
    """Write `model_dir/config.json` atomically; returns its path."""
    path = os.path.join(model_dir, CONFIG_FILE)
    write_json_atomic(path, config.to_dict())
    return path


def load_config(model_dir: str) -> TransformerXLConfig:
    """Read `model_dir/config.json`."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if os.path.exists(model_dir) and not os.path.isdir(model_dir):
        raise ModelDirError(f"{model_dir} is a file, not a txl-tf model directory; give the "
                            "directory that holds config.json and the checkpoints.")
    if not os.path.lexists(path):
        raise ModelDirError(missing_config_message(model_dir))
    try:
        text = read_text_file(path, path, ModelDirError, max_bytes=MAX_CONFIG_BYTES,
                              inside=model_dir)
    except ModelDirError:
        raise
    except FileNotFoundError:  # a link to nothing
        raise ModelDirError(missing_config_message(model_dir)) from None
    try:
        return TransformerXLConfig.from_json(text)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def save_model(model: TransformerXL, model_dir: str, max_to_keep: int = 3) -> str:
    """Save the configuration and the weights of `model` into `model_dir`.

    Returns the checkpoint path written. The checkpoint is written first and the
    `checkpoint` state file is switched to it last, so an interrupted save leaves the previous
    one readable.
    """
    os.makedirs(model_dir, exist_ok=True)
    save_config(model.config, model_dir)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir,
                                         max_to_keep=max_to_keep)
    return manager.save()


MAX_STATE_BYTES = 1 * reading.MiB  # the `checkpoint` state file: a line per checkpoint kept


def state_file_readable(model_dir: str) -> bool:
    """Whether TensorFlow may read `model_dir`'s `checkpoint` state file: missing (TF says
    so), or a regular file inside the directory of at most `MAX_STATE_BYTES` (a named pipe
    there would block TF's read; a link out would name checkpoints elsewhere)."""
    path = os.path.join(model_dir, layout.CHECKPOINT_STATE_FILE)
    if "://" in model_dir or not os.path.lexists(path):
        return True
    try:
        os.close(reading.open_checked(path, inside=model_dir, max_bytes=MAX_STATE_BYTES))
    except (OSError, reading.UntrustedFileError):
        return False
    return True


def latest_checkpoint(model_dir: str) -> Optional[str]:
    """Path prefix of the newest checkpoint in `model_dir`, or None.

    The one the `checkpoint` state file names when it is readable and its .index exists;
    otherwise (state file garbage or missing) the highest-numbered `ckpt-N` with an .index.
    """
    path = None
    if state_file_readable(model_dir):
        try:
            with quiet_tf_warnings():  # a state file TF cannot parse: the files are listed below
                path = tf.train.latest_checkpoint(model_dir)
        except (ValueError, tf.errors.OpError):  # a state file with an empty path
            pass
    if path is not None and ("://" in model_dir or reading.is_inside(path, model_dir)):
        return path
    numbers = [n for n, names in checkpoint_files(model_dir).items()
               if f"{layout.checkpoint_basename(n)}.index" in names]
    return layout.checkpoint_prefix(model_dir, max(numbers)) if numbers else None


def check_checkpoint_files(checkpoint_path: str) -> None:
    """Raises `CheckpointReadError` when a file of the checkpoint (its .index and .data-*) is
    not a regular file inside its directory (a link out, a named pipe), before TensorFlow
    reads it."""
    problem = checkpoint_probes.file_problem(checkpoint_path)
    if problem:
        raise CheckpointReadError(f"{problem}; restore the checkpoint's files, or give another "
                                  "checkpoint.")


def restore_weights(model: TransformerXL, checkpoint_path: str) -> None:
    """Load the model part of a txl-tf checkpoint into `model`; every model variable must be
    found with its shape, else a `ModelDirError` says which configuration differs."""
    if not tf.io.gfile.exists(checkpoint_path + ".index"):
        raise CheckpointReadError(
            f"{checkpoint_path}.index not found: {checkpoint_path!r} is not a checkpoint "
            "(give a model directory or a checkpoint prefix such as <dir>/ckpt-60).")
    check_checkpoint_files(checkpoint_path)
    problem = None
    with quiet_tf_warnings():
        try:
            status = tf.train.Checkpoint(model=model).read(checkpoint_path)
            status.expect_partial()
            status.assert_existing_objects_matched()
        except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as error:
            problem = ModelDirError(
                f"the checkpoint {checkpoint_path} does not fit a model of this configuration "
                f"({first_line(error)}). Check that config.json (n_layer, d_model, n_head * "
                "d_head, n_token, cutoffs, div_val, untie_r, ...) is the one the checkpoint was "
                "written with.")
        except Exception as error:  # noqa: BLE001 - classified just below
            if not is_damage_error(error):
                raise
            problem = CheckpointReadError(
                f"the checkpoint {checkpoint_path} cannot be read: its files are damaged or not "
                f"a TF checkpoint ({first_line(error)}).")
        if problem is not None:
            gc.collect()  # the failed restore warns of its unmatched values when collected
    if problem is not None:
        raise problem
    config_file = os.path.join(os.path.dirname(checkpoint_path), CONFIG_FILE)
    try:
        check_no_extra_weights(checkpoint_model_weights(checkpoint_path), model,
                               checkpoint_path, config_file)
    except ExtraWeightsError as error:
        raise ModelDirError(str(error)) from None


@dataclasses.dataclass(frozen=True)
class CheckpointChoice:
    """The checkpoint of a model directory that a reader uses.

    Attributes:
      name: what was asked for: "latest", "best", "ckpt-N" or the path prefix given.
      path: the checkpoint's path prefix (e.g. runs/book/best/ckpt-200).
      step: the training step it was saved at (its `step` variable, or best.json's `step`);
        None for a checkpoint that records none (`save_model`, an import).
    """
    name: str
    path: str
    step: Optional[int]

    def to_json(self) -> dict:
        """The fields a command's JSON result names it with."""
        return {"checkpoint": self.path, "checkpoint_name": self.name,
                "checkpoint_step": self.step}


def read_best(model_dir: str) -> Optional[dict]:
    """`model_dir/best/best.json` ({"step", "valid_loss", ...}), or `model_dir/best.json` when
    `model_dir` is a best/ directory; None when there is none or it cannot be read."""
    for path in (os.path.join(model_dir, BEST_DIR, BEST_FILE),
                 os.path.join(model_dir, BEST_FILE)):
        if not os.path.lexists(path):
            continue
        best = reading.read_json_or_none(path)
        return best if isinstance(best, dict) else None
    return None


def checkpoint_step(checkpoint_path: str) -> Optional[int]:
    """The training step a checkpoint was saved at: its `step` variable, else the `step` of the
    best.json beside it; None when neither exists.

    Raises:
      CheckpointReadError: a file of the checkpoint is not a regular file inside its
        directory (`check_checkpoint_files`).
    """
    check_checkpoint_files(checkpoint_path)
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
        if reader.has_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"):
            return int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
    except Exception as error:  # noqa: BLE001 - a damaged file is reported when it is restored
        if not is_damage_error(error):
            raise
    best = os.path.join(os.path.dirname(checkpoint_path), BEST_FILE)
    record = reading.read_json_or_none(best, schema=schema.Obj({"step": schema.Int(0)},
                                                               required=("step",)))
    return None if record is None else record["step"]


def _available(model_dir: str) -> str:
    """The checkpoints a --checkpoint value can name in `model_dir`, for error messages."""
    names = [layout.checkpoint_basename(n)
             for n, files in sorted(checkpoint_files(model_dir).items())
             if f"{layout.checkpoint_basename(n)}.index" in files]
    best = latest_checkpoint(os.path.join(model_dir, BEST_DIR))
    if best:
        names.append(f"best ({os.path.basename(best)})")
    return ", ".join(names) if names else "no checkpoint"


def _checkpoint_path(model_dir: str, which: str) -> str:
    """The path prefix `which` (see `choose_checkpoint`) names in `model_dir`."""
    if which == LATEST:
        path = latest_checkpoint(model_dir)
        if path is None:
            raise ModelDirError(
                f"no checkpoint in {model_dir!r} (config.json is there but no ckpt-N.index "
                "file); the training run may not have saved yet.")
        return path
    if which == BEST:
        if os.path.isdir(os.path.join(model_dir, BEST_DIR)):
            return _checkpoint_path(os.path.join(model_dir, BEST_DIR), LATEST)
        if os.path.isfile(os.path.join(model_dir, BEST_FILE)):  # model_dir is a best/ itself
            return _checkpoint_path(model_dir, LATEST)
        raise ModelDirError(
            f"--checkpoint=best: {model_dir} has no best/ directory (a training run keeps it "
            "when it evaluates on the valid split, every --eval_steps); use "
            f"--checkpoint=latest or one of: {_available(model_dir)}.")
    if re.fullmatch(rf"{layout.CHECKPOINT_NAME}-\d+", which):
        for directory in (model_dir, os.path.join(model_dir, BEST_DIR)):
            if tf.io.gfile.exists(os.path.join(directory, which) + ".index"):
                return os.path.join(directory, which)
        raise ModelDirError(f"--checkpoint={which}: no such checkpoint in {model_dir}; it has "
                            f"{_available(model_dir)}.")
    if os.sep in which or tf.io.gfile.exists(which + ".index"):
        if not tf.io.gfile.exists(which + ".index"):
            raise ModelDirError(f"--checkpoint={which}: no such checkpoint ({which}.index does "
                                f"not exist); {model_dir} has {_available(model_dir)}.")
        return which
    raise ModelDirError(f"--checkpoint={which}: not a checkpoint name; give latest, best, "
                        f"ckpt-N or a checkpoint path prefix ({model_dir} has "
                        f"{_available(model_dir)}).")


def choose_checkpoint(model_dir: str, which: Optional[str] = LATEST) -> CheckpointChoice:
    """The checkpoint of `model_dir` that `which` names.

    Args:
      model_dir: a model directory (a training run's, or its best/ directory).
      which: "latest" (or None): the newest checkpoint of `model_dir`; "best": the one of
        `model_dir/best/` (`model_dir`'s own when it is a best/ directory); "ckpt-N":
        `model_dir/ckpt-N`, else `model_dir/best/ckpt-N`; anything with a path separator: a
        checkpoint path prefix.

    Returns:
      The `CheckpointChoice`.

    Raises:
      ModelDirError: `model_dir` is not a model directory (no config.json), or no such
        checkpoint (the message lists the ones there are).
    """
    load_config(model_dir)  # a directory that is not a model's is named as such first
    which = which or LATEST
    path = _checkpoint_path(model_dir, which)
    return CheckpointChoice(which, path, checkpoint_step(path))


def describe_choice(model_dir: str, choice: CheckpointChoice) -> str:
    """One line for people naming the checkpoint used, and best/ when it holds another step:
    "checkpoint: latest = runs/book/ckpt-600 (step 600); best/ holds step 200 (valid loss
    7.8003): --checkpoint=best uses it"."""
    line = f"checkpoint: {choice.name} = {choice.path}"
    facts = [] if choice.step is None else [f"step {choice.step}"]
    best = read_best(model_dir) or {}
    loss = best.get("valid_loss")
    loss = f"valid loss {loss:.4f}" if isinstance(loss, (int, float)) else None
    if "step" not in best or best["step"] == choice.step:
        facts += ["the best on validation", loss] if "step" in best else []
        return line + (f" ({', '.join(f for f in facts if f)})" if facts else "")
    line += f" ({', '.join(facts)})" if facts else ""
    return line + (f"; best/ holds step {best['step']}" + (f" ({loss})" if loss else "")
                   + ": --checkpoint=best uses it")


def load_model(model_dir: str, checkpoint: Optional[str] = LATEST,
               **overrides) -> TransformerXL:
    """The ready `TransformerXL` of a txl-tf model directory, trained or imported.

    Args:
      model_dir: directory with config.json and at least one checkpoint.
      checkpoint: which one: "latest" (default), "best", "ckpt-N" or a path prefix (see
        `choose_checkpoint`).
      **overrides: configuration fields to change, e.g. run settings for evaluation
        (mem_len=1600, clamp_len=1000, same_length=True, dropout=0.0, dropatt=0.0). Fields that
        change weight shapes make the restore fail with a clear error.

    Example:
      model = txl_tf.load_model("runs/book", checkpoint="best", mem_len=1600)
    """
    config = load_config(model_dir)
    if overrides:
        config = config.replace(**overrides)
    path = choose_checkpoint(model_dir, checkpoint).path
    model = TransformerXL(config)
    try:
        apply_lora_record(model, model_dir)  # a --lora_rank run's adapters, before the restore
    except ValueError as error:
        raise ModelDirError(str(error)) from None
    restore_weights(model, path)
    return model
