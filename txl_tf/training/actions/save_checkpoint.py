"""`SaveCheckpoint`: a training checkpoint every `every` steps, with every worker's memory."""
from typing import Callable

from absl import logging

from txl_tf.training.checkpoints import TrainCheckpoints
from txl_tf.training.controller import LoopOutput, due


class SaveCheckpoint:
    """Training checkpoint every `every` steps (0: only at `train_steps`).

    Args:
      checkpoints: the run's `TrainCheckpoints`.
      every: save interval in steps.
      train_steps: the last step of the run.
      memories: per-replica memory -> every worker's memory arrays (`[]`: none saved; a
        resumed run restarts the memory from zeros). Every worker must call it (collective).
    """

    def __init__(self, checkpoints: TrainCheckpoints, every: int, train_steps: int,
                 memories: Callable[[list], list]):
        self.checkpoints = checkpoints
        self.every = every
        self.train_steps = train_steps
        self.memories = memories

    def __call__(self, output: LoopOutput) -> None:
        if not due(output.step, self.every, self.train_steps):
            return
        path = self.checkpoints.save(output.step, self.memories(output.mems))
        output.saved = True
        logging.info("saved %s", path)
