"""`model_dir/best/`: the best checkpoint on validation so far, a complete model directory.

`best/` holds config.json, checkpoint, ckpt-<step>.* (model and step only), best.json (the
record of `txl_tf.training.actions.KeepBest`: step, valid_loss and bpc or ppl) and the data's
vocab.txt and corpus-info.json. It is written whole into `.best-tmp-<step>-<pid>/`, then swapped
in with `txl_tf.storage.atomic_writes.atomic_directory` (the previous one kept as `.best-old`
between the two renames). Which evaluation is the best is `KeepBest`'s decision; this class only
reads and writes the files.
"""
import os
from typing import Callable, Optional

import tensorflow as tf

from txl_tf.storage.atomic_writes import atomic_directory, write_json_atomic
from txl_tf.runtime.error_text import first_line
from txl_tf.storage import model_files
from txl_tf.storage.model_dir_layout import (BEST_DIR, BEST_FILE, BEST_OLD, BEST_TMP_PREFIX,
                                             CHECKPOINT_NAME)
from txl_tf.training.checkpoints.errors import save_error
from untrusted_files import reading, schema

# best/best.json: the step and loss of the best checkpoint (more fields are shown, not used)
BEST_SCHEMA = schema.Obj({"step": schema.Int(0), "valid_loss": schema.Num()},
                         required=("valid_loss",))


class BestCheckpoint:
    """Reads best/best.json and writes a new best/ (chief only).

    Args:
      model_dir: the run directory.
      model: the `TransformerXL` whose weights a new best/ holds.
      is_chief: whether this process writes into `model_dir`.
    """

    def __init__(self, model_dir: str, model, is_chief: bool = True):
        self.model_dir = model_dir
        self.directory = os.path.join(model_dir, BEST_DIR)
        self.model = model
        self.is_chief = is_chief

    def read(self) -> Optional[dict]:
        """The record best/best.json holds, with a numeric "valid_loss"; None when there is none
        or it cannot be read (a warning: the next evaluation replaces best/)."""
        path = os.path.join(self.directory, BEST_FILE)
        if not os.path.exists(path):
            return None
        try:
            record = reading.read_json(path, inside=self.directory, error=ValueError,
                                       fix="the next evaluation replaces it",
                                       schema=BEST_SCHEMA)
            return dict(record, valid_loss=float(record["valid_loss"]))
        except (ValueError, OSError) as error:
            print(f"warning: {path} cannot be read ({first_line(error)}); the next evaluation "
                  "replaces best/.", flush=True)
            return None

    def write(self, step: int, record: dict,
              copy_data_files: Optional[Callable[[str], None]] = None) -> None:
        """Replace best/ by the model at `step` with `record` as best.json (chief). The new
        best/ is written whole into a temporary directory, then swapped in.

        Args:
          step: the training step of the model's weights.
          record: the content of best.json.
          copy_data_files: `copy_data_files(directory)` writes the vocabulary files into the
            new best/ (`DataSource.copy_to`), so that it is a complete model directory.

        Raises:
          CheckpointIOError: the copy failed (e.g. disk full); best/ is left as it was.
        """
        if not self.is_chief:
            return
        try:
            with atomic_directory(self.directory, f"{BEST_TMP_PREFIX}{step}-{os.getpid()}",
                                  BEST_OLD) as tmp:
                model_files.save_config(self.model.config, tmp)
                tf.train.CheckpointManager(tf.train.Checkpoint(model=self.model), tmp,
                                           max_to_keep=1, checkpoint_name=CHECKPOINT_NAME
                                           ).save(checkpoint_number=step)
                write_json_atomic(os.path.join(tmp, BEST_FILE), record)
                if copy_data_files is not None:
                    copy_data_files(tmp)
        except (OSError, tf.errors.OpError) as error:
            previous = model_files.latest_checkpoint(self.directory)
            raise save_error(error, f"the best checkpoint (step {step})", self.model_dir,
                             previous and f"{previous} (best/)") from None
