"""Warm start: the model weights of another model directory or checkpoint, not its optimizer."""
import os

import tensorflow as tf

from txl_tf.model.lora import copy_weights, has_adapters
from txl_tf.storage import model_files
from txl_tf.storage.model_dir_layout import CONFIG_FILE
from txl_tf.model.config import check_against_saved
from txl_tf.training.errors import TrainError

_EXAMPLE = "give a trained model directory or a checkpoint prefix such as <dir>/ckpt-60"


def checkpoint_prefix(path: str, config) -> str:
    """The checkpoint prefix `path` names: a model directory's newest checkpoint (its
    config.json compared with `config`) or the prefix of `<dir>/ckpt-60[.index]`.

    Raises:
      TrainError: no such checkpoint. ConfigError: another model configuration.
    """
    flag = f"--init_checkpoint={path}"
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, CONFIG_FILE)):
            check_against_saved(config, model_files.load_config(path), flag)
        checkpoint = model_files.latest_checkpoint(path)
        if checkpoint is None:
            raise TrainError(f"{flag}: no checkpoint in that directory (no ckpt-N.index); "
                             f"{_EXAMPLE}.")
        return checkpoint
    checkpoint = path
    for suffix in (".index", ".data-00000-of-00001"):
        if path.endswith(suffix):
            checkpoint = path[:-len(suffix)]
    if not tf.io.gfile.exists(checkpoint + ".index"):
        what = "no such file or directory" if not os.path.exists(path) else "not a checkpoint"
        raise TrainError(f"{flag}: {what} ({_EXAMPLE}).")
    return checkpoint


def warm_start(model, path: str, config) -> str:
    """Load model weights (not optimizer state) from a model directory or checkpoint path.

    Args:
      model: the built `TransformerXL` to fill.
      path: a txl-tf model directory (its newest checkpoint) or a checkpoint prefix
        (`<dir>/ckpt-60`; `<dir>/ckpt-60.index` is accepted too).
      config: the run's `TransformerXLConfig`, compared with the directory's config.json.

    Returns:
      The checkpoint prefix read.

    Raises:
      TrainError: one line naming the problem (missing path, no checkpoint, damaged or
        foreign files).
      ConfigError: the directory's config.json is another model configuration.
    """
    checkpoint = checkpoint_prefix(path, config)
    try:
        if has_adapters(model):  # --lora_rank: the plain model's weights under the adapters
            plain = type(model)(config)
            model_files.restore_weights(plain, checkpoint)
            copy_weights(plain, model)
        else:
            model_files.restore_weights(model, checkpoint)
    except model_files.ModelDirError as error:
        raise TrainError(f"--init_checkpoint={path}: {error}") from None
    return checkpoint
