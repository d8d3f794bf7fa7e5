"""The periodic actions of a training run, fired by `Controller` after each compiled loop.

Each action is called after every loop with its `LoopOutput` and acts when its interval ends
(`every` steps) or at the last step of the run:
  `Throughput`     tokens per second without the first loop (tracing), for the summary;
  `LogProgress`    console line and TensorBoard training scalars (loss, bpc/ppl, learning_rate,
                   grad_norm, tokens_per_sec) over the steps since the last line;
  `Evaluate`       validation loss: TensorBoard scalars and a console line;
  `SaveCheckpoint` training checkpoint with every worker's memory;
  `KeepBest`       after a save at an evaluated step: model_dir/best/ when the validation loss
                   is the best so far.
"""
from typing import Callable, Optional

from absl import logging

from txl_tf.training.checkpoints import TrainCheckpoints
from txl_tf.training.controller import LoopOutput, due
from txl_tf.loss_report import format_loss
from txl_tf.training.summaries import RunSummaries, metric_value
from txl_tf.training.trainer import LoopStats


class Throughput:
    """Training tokens per second, without the first loop of the process (tracing)."""
    every = 0

    def __init__(self):
        self.seconds = 0.0
        self.tokens = 0.0
        self.first_loop = None  # (seconds, tokens)

    def __call__(self, output: LoopOutput) -> None:
        if self.first_loop is None:
            self.first_loop = (output.seconds, output.stats.tokens)
        else:
            self.seconds += output.seconds
            self.tokens += output.stats.tokens

    def summary(self) -> dict:
        """`tokens_per_sec` (the first loop when it was the only one, flagged by
        `tokens_per_sec_includes_tracing`)."""
        first_seconds, first_tokens = self.first_loop or (0.0, 0.0)
        rate = (self.tokens / self.seconds if self.seconds else
                first_tokens / first_seconds if first_seconds else None)
        return {"tokens_per_sec": rate,
                "tokens_per_sec_includes_tracing": not self.seconds and bool(first_seconds)}


class LogProgress:
    """Console line (chief) and training scalars every `every` steps and at `train_steps`.

    Args:
      summaries: the run's TensorBoard writers.
      every: log interval in steps.
      train_steps: the last step of the run (its line shows `step/train_steps` and the ETA).
      learning_rate: step index -> learning rate of that update.
      echo: print the line (the chief); every worker logs it.
    """

    def __init__(self, summaries: RunSummaries, every: int, train_steps: int,
                 learning_rate: Callable[[int], float], echo: bool = True):
        self.summaries = summaries
        self.every = every
        self.train_steps = train_steps
        self.learning_rate = learning_rate
        self.echo = echo
        self.last_loss: Optional[float] = None
        self._reset()

    def _reset(self) -> None:
        self.nll = self.tokens = self.grad_norm = self.seconds = 0.0
        self.steps = 0

    def __call__(self, output: LoopOutput) -> None:
        self.nll += output.stats.nll_sum
        self.tokens += output.stats.tokens
        self.grad_norm += output.stats.grad_norm_sum
        self.steps += output.num_steps
        self.seconds += output.seconds
        if not due(output.step, self.every, self.train_steps):
            return
        step, loss = output.step, self.nll / max(self.tokens, 1.0)
        tokens_per_sec = self.tokens / max(self.seconds, 1e-9)
        lr = self.learning_rate(step - 1)
        self.summaries.train(step, loss, lr, self.grad_norm / self.steps, tokens_per_sec)
        eta = self.seconds / self.steps * (self.train_steps - step)
        line = self.summaries.console(step, self.train_steps, loss, lr, tokens_per_sec, eta)
        if self.echo:
            print(line, flush=True)
        self.last_loss = loss
        self._reset()


class Evaluate:
    """Validation every `every` steps (0: only at `train_steps`): scalars and a console line.

    Args:
      evaluate: runs one evaluation and returns its `LoopStats`.
      summaries: the run's TensorBoard writers.
      every: evaluation interval in steps.
      train_steps: the last step of the run.
      echo: print the line (the chief).
    """

    def __init__(self, evaluate: Callable[[], LoopStats], summaries: RunSummaries, every: int,
                 train_steps: int, echo: bool = True):
        self.evaluate = evaluate
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
        self.summaries.valid(output.step, stats.loss)
        if self.echo:
            print(f"valid at step {output.step}: "
                  f"{format_loss(stats.loss, self.summaries.level)} "
                  f"({int(stats.tokens):,} tokens)", flush=True)


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
        self.last_step: Optional[int] = None

    def __call__(self, output: LoopOutput) -> None:
        if not due(output.step, self.every, self.train_steps):
            return
        path = self.checkpoints.save(output.step, self.memories(output.mems))
        self.last_step = output.step
        logging.info("saved %s", path)


class KeepBest:
    """After a save at a step that was evaluated: model_dir/best/ when the validation loss is
    the best so far (`TrainCheckpoints.maybe_save_best`)."""
    every = 0

    def __init__(self, checkpoints: TrainCheckpoints, save: SaveCheckpoint,
                 evaluation: Evaluate, level: str):
        self.checkpoints = checkpoints
        self.save = save
        self.evaluation = evaluation
        self.level = level

    def __call__(self, output: LoopOutput) -> None:
        if not output.step == self.save.last_step == self.evaluation.last_step:
            return
        loss = self.evaluation.last_loss
        metric = self.evaluation.summaries.metric
        self.checkpoints.maybe_save_best(output.step, loss,
                                         {metric: metric_value(loss, self.level)})
