"""A txl-tf model directory: the only file I/O of the `txl_tf` package.

Layout of `model_dir`:
  config.json           the `TransformerXLConfig` (JSON, written atomically);
  checkpoint, ckpt-N.*  TF checkpoints (`tf.train.CheckpointManager`) whose root object has the
                        model under the attribute `model`. Training checkpoints add the
                        optimizer, step and data position beside it; `load_model` reads the
                        model part of whichever is newest.
Runners may add their own files (vocabulary, TensorBoard logs); this module ignores them.
"""
import json
import os
import tempfile

import tensorflow as tf

from txl_tf.config import TransformerXLConfig
from txl_tf.transformer_xl import TransformerXL

CONFIG_FILE = "config.json"


class ModelDirError(FileNotFoundError):
    """A model directory that is missing, incomplete or does not fit its configuration."""


def write_json_atomic(path: str, payload) -> None:
    """Write JSON through a temporary file in the same directory, then rename it into place."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; others may share the model_dir
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save_config(config: TransformerXLConfig, model_dir: str) -> str:
    """Write `model_dir/config.json` atomically; returns its path."""
    path = os.path.join(model_dir, CONFIG_FILE)
    write_json_atomic(path, config.to_dict())
    return path


def load_config(model_dir: str) -> TransformerXLConfig:
    """Read `model_dir/config.json`."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise ModelDirError(
            f"{path} not found: {model_dir!r} is not a txl-tf model directory (train one with "
            "runners/train.py, import one with runners/import_weights.py, or save one with "
            "txl_tf.save_model).")
    with open(path) as f:
        return TransformerXLConfig.from_json(f.read())


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


def latest_checkpoint(model_dir: str):
    """Path prefix of the newest checkpoint in `model_dir`, or None."""
    return tf.train.latest_checkpoint(model_dir)


def restore_weights(model: TransformerXL, checkpoint_path: str) -> None:
    """Load the model part of a txl-tf checkpoint into `model`; every model variable must be
    found with its shape, else a `ModelDirError` says which configuration differs."""
    try:
        status = tf.train.Checkpoint(model=model).read(checkpoint_path)
        status.expect_partial()
        status.assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as error:
        raise ModelDirError(
            f"the checkpoint {checkpoint_path} does not fit a model of this configuration "
            f"({error}). Check that config.json (n_layer, d_model, n_head * d_head, n_token, "
            "cutoffs, div_val, untie_r, ...) is the one the checkpoint was written with."
        ) from None


def load_model(model_dir: str, **overrides) -> TransformerXL:
    """The ready `TransformerXL` of a txl-tf model directory, trained or imported.

    Args:
      model_dir: directory with config.json and at least one checkpoint.
      **overrides: configuration fields to change, e.g. run settings for evaluation
        (mem_len=1600, clamp_len=1000, same_length=True, dropout=0.0, dropatt=0.0). Fields that
        change weight shapes make the restore fail with a clear error.
    """
    config = load_config(model_dir)
    if overrides:
        config = config.replace(**overrides)
    checkpoint = latest_checkpoint(model_dir)
    if checkpoint is None:
        raise ModelDirError(
            f"no checkpoint in {model_dir!r} (config.json is there but no 'checkpoint' state "
            "file); the training run may not have saved yet.")
    model = TransformerXL(config)
    restore_weights(model, checkpoint)
    return model
