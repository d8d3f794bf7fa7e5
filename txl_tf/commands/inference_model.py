"""The model of a chosen checkpoint for inference: what evaluate, generate and export load.

Example:
  >>> choice = model_files.choose_checkpoint(model_dir, "best")
  >>> model = load_inference_model(model_dir, choice, mem_len=1600)
"""
import sys

from txl_tf.storage import model_files


def load_inference_model(model_dir: str, choice: model_files.CheckpointChoice, **run_settings):
    """The model of checkpoint `choice` of `model_dir` with dropout off; one line on stderr
    names the checkpoint.

    Args:
      model_dir: the model directory (its config.json).
      choice: the `CheckpointChoice` (`txl_tf.choose_checkpoint`).
      **run_settings: config fields to change (tgt_len, mem_len, clamp_len, same_length).

    Returns:
      The `TransformerXL`, its weights restored.

    Raises:
      ModelDirError, tf.errors.OpError: the checkpoint cannot be read.
    """
    print(model_files.describe_choice(model_dir, choice), file=sys.stderr, flush=True)
    return model_files.load_model(model_dir, choice.path,
                                  **{"dropout": 0.0, "dropatt": 0.0, **run_settings})
