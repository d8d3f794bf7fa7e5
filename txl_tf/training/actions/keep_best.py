"""`KeepBest`: model_dir/best/ when the validation loss is the best so far."""
from typing import Callable, Optional

from txl_tf.training.checkpoints import BestCheckpoint
from txl_tf.training.controller import LoopOutput
from txl_tf.training.reporting.tensorboard import metric_name, metric_value


class KeepBest:
    """After a save at a step that was evaluated (`output.saved` and `output.valid_loss`):
    model_dir/best/ when the validation loss is the best so far, with the data's vocabulary files
    (`copy_data_files(directory)`, e.g. `DataSource.copy_to`) so that best/ is a complete model
    directory.

    The action keeps its own record of the best evaluation (`best_step`, `best_loss`): read from
    best/best.json at its first evaluation (a resumed run continues the record), written there
    with every new best/, and changed only once best/ was written whole. Only the chief keeps
    best/; on other workers the action does nothing.

    Args:
      best: the run's `BestCheckpoint` (`TrainCheckpoints.best`).
      level: the data's level; best.json adds the loss in its unit (bpc, ppl, ...).
      copy_data_files: writes the data's vocabulary files into a directory.

    Example:
      >>> keep = KeepBest(checkpoints.best, "char", data.copy_to)
      >>> keep.consider(step=600, loss=0.85)  # True: best/ now holds step 600
    """
    every = 0

    def __init__(self, best: BestCheckpoint, level: str,
                 copy_data_files: Optional[Callable[[str], None]] = None):
        self.best = best
        self.level = level
        self.copy_data_files = copy_data_files
        self.best_step: Optional[int] = None
        self.best_loss: Optional[float] = None
        self._record_read = False

    def __call__(self, output: LoopOutput) -> None:
        if output.saved and output.valid_loss is not None:
            self.consider(output.step, output.valid_loss)

    def consider(self, step: int, loss: float) -> bool:
        """Write best/ with the model at `step` when `loss` (nats per token) is below the best
        so far; returns whether it did.

        Raises:
          CheckpointIOError: best/ could not be written; it and the record are as they were.
        """
        if not self.best.is_chief:
            return False
        self._read_record()
        if self.best_loss is not None and not loss < self.best_loss:
            return False
        record = {"step": step, "valid_loss": loss,
                  metric_name(self.level): metric_value(loss, self.level)}
        self.best.write(step, record, self.copy_data_files)
        self.best_step, self.best_loss = step, loss
        return True

    def _read_record(self) -> None:
        """The best so far from best/best.json, once (none when it is missing or unreadable)."""
        if self._record_read:
            return
        self._record_read = True
        record = self.best.read()
        if record is not None:
            self.best_step, self.best_loss = record.get("step"), record["valid_loss"]
