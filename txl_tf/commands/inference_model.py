"""The model of a chosen checkpoint for inference: what evaluate, generate and export load.

Example:
  >>> choice = model_files.choose_checkpoint(model_dir, "best")
  >>> settings = ContextSettings.of_config(model_files.load_config(model_dir), mem_len=1600)
  >>> model = load_inference_model(model_dir, choice, settings)
"""
import dataclasses
import sys
from typing import Optional

from txl_tf.model.context_settings import ContextSettings
from txl_tf.storage import model_files


def load_inference_model(model_dir: str, choice: model_files.CheckpointChoice,
                         settings: Optional[ContextSettings] = None):
    """The model of checkpoint `choice` of `model_dir` with dropout off; one line on stderr
    names the checkpoint.

    Args:
      model_dir: the model directory (its config.json).
      choice: the `CheckpointChoice` (`txl_tf.choose_checkpoint`).
      settings: the run settings the model's config takes (None: its own).

    Returns:
      The `TransformerXL`, its weights restored.

    Raises:
      ModelDirError, tf.errors.OpError: the checkpoint cannot be read.
    """
    print(model_files.describe_choice(model_dir, choice), file=sys.stderr, flush=True)
    run_settings = {} if settings is None else dataclasses.asdict(settings)
    return model_files.load_model(model_dir, choice.path, dropout=0.0, dropatt=0.0,
                                  **run_settings)
