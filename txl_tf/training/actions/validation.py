"""`Evaluate`: validation every `every` steps: scalars and a console line."""
from typing import Callable, Optional

from txl_tf.loss.loss_report import format_loss
from txl_tf.training.controller import LoopOutput, due
from txl_tf.training.reporting.tensorboard import RunSummaries
from txl_tf.training.trainer import LoopStats


class Evaluate:
    """Validation every `every` steps (0: only at `train_steps`): scalars and a console line.

    Args:
      evaluate: runs one evaluation and returns its `LoopStats`.
      summaries: the run's TensorBoard writers.
      every: evaluation interval in steps.
      train_steps: the last step of the run.
      echo: print the line (the chief).
      baseline: the unigram entropy of the evaluated split (nats), shown on the line beside
        the loss it is to be compared with (None: not shown).
    """

    def __init__(self, evaluate: Callable[[], LoopStats], summaries: RunSummaries, every: int,
                 train_steps: int, echo: bool = True, baseline: Optional[float] = None):
        self.evaluate = evaluate
        self.baseline = baseline
        self.summaries = summaries
        self.every = every
        self.train_steps = train_steps
        self.echo = echo
        self.last_step: Optional[int] = None
        self.last_loss: Optional[float] = None

    def __call__(self, output: LoopOutput) -> None:
        if not due(output.step, self.every, self.train_steps):
            return
        stats = self.evaluate()
        self.last_step, self.last_loss = output.step, stats.loss
        output.valid_loss = stats.loss
        self.summaries.valid(output.step, stats.loss)
        if self.echo:
            unigram = ("" if self.baseline is None
                       else f"; unigram of the valid split {self.baseline:.4f}")
            print(f"valid at step {output.step}: "
                  f"{format_loss(stats.loss, self.summaries.level)} "
                  f"({int(stats.tokens):,} tokens{unigram})", flush=True)
