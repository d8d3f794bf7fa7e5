"""The periodic actions of a training run, fired by `Controller` after each compiled loop.

Each action is called after every loop with its `LoopOutput` and acts when its interval ends
(`every` steps) or at the last step of the run:
  `Throughput`     tokens per second without the first loop (tracing), for the summary;
  `LogProgress`    console line and TensorBoard training scalars (loss, bpc/ppl, learning_rate,
                   grad_norm, tokens_per_sec) over the steps since the last line, and the ETA
                   at the run's `StepPace`; also where a loop ends after the heartbeat's
                   silence (`txl_tf/training/heartbeat.py`);
  `MeasuredDuration` once, when the first loop after compilation ends: the duration line
                   with the measured seconds per step in place of the estimate;
  `Evaluate`       validation loss: TensorBoard scalars and a console line (and
                   `output.valid_loss` for the actions after it);
  `SaveCheckpoint` training checkpoint with every worker's memory (and `output.saved`);
  `KeepBest`       after a save at an evaluated step: model_dir/best/ when the validation loss
                   is the best so far (its own record of the best, kept in best/best.json);
  `HParamsMetrics` the losses just logged or validated as the metrics of the run's session of
                   TensorBoard's HPARAMS dashboard (`txl_tf/training/hparams_session.py`).
"""
from typing import Callable, Optional

from absl import logging

from txl_tf.training.checkpoints import BestCheckpoint, TrainCheckpoints
from txl_tf.training import duration
from txl_tf.training.controller import LoopOutput, due
from txl_tf.training.hparams_session import HParamsSession
from txl_tf.training.heartbeat import Heartbeat
from txl_tf.loss_report import format_loss
from txl_tf.training.step_pace import StepPace
from txl_tf.training.summaries import RunSummaries, metric_name, metric_value
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
    """Console line (chief) and training scalars every `every` steps, at `train_steps`, and
    where a loop ends when waiting for the next one would leave the console silent longer than
    the heartbeat's `seconds`.

    Args:
      summaries: the run's TensorBoard writers.
      every: log interval in steps.
      train_steps: the last step of the run (its line shows `step/train_steps` and the ETA).
      learning_rate: step index -> learning rate of that update.
      echo: print the line (the chief); every worker logs it.
      heartbeat: the run's `Heartbeat` (time-based lines; it keeps the time of the last line
        and the run's `StepPace`, which the ETA reads; without one, the log keeps its own).
    """

    def __init__(self, summaries: RunSummaries, every: int, train_steps: int,
                 learning_rate: Callable[[int], float], echo: bool = True,
                 heartbeat: Optional[Heartbeat] = None):
        self.summaries = summaries
        self.every = every
        self.train_steps = train_steps
        self.learning_rate = learning_rate
        self.echo = echo
        self.heartbeat = heartbeat
        self.pace = heartbeat.pace if heartbeat is not None else StepPace()
        self.last_step: Optional[int] = None
        self.last_loss: Optional[float] = None
        self._reset()

    def _due(self, output: LoopOutput) -> bool:
        """The step-based interval ends, or another loop as long as this one would leave the
        console silent for longer than the heartbeat's seconds."""
        hb = self.heartbeat
        return due(output.step, self.every, self.train_steps) or bool(
            hb and hb.seconds and hb.clock() - hb.last_line + output.seconds >= hb.seconds)

    def _reset(self) -> None:
        self.nll = self.tokens = self.grad_norm = self.seconds = 0.0
        self.steps = 0

    def __call__(self, output: LoopOutput) -> None:
        if self.heartbeat is None:  # else the controller told the heartbeat's pace
            self.pace.loop_finished(output.num_steps, output.seconds)
        self.nll += output.stats.nll_sum
        self.tokens += output.stats.tokens
        self.grad_norm += output.stats.grad_norm_sum
        self.steps += output.num_steps
        self.seconds += output.seconds
        if not self._due(output):
            return
        step, loss = output.step, self.nll / max(self.tokens, 1.0)
        tokens_per_sec = self.tokens / max(self.seconds, 1e-9)
        lr = self.learning_rate(step - 1)
        self.summaries.train(step, loss, lr, self.grad_norm / self.steps, tokens_per_sec)
        eta = self.pace.seconds_per_step() * (self.train_steps - step)
        note = {} if self.pace.measured else {"eta_note": "compilation included"}
        line = self.summaries.console(step, self.train_steps, loss, lr, tokens_per_sec, eta,
                                      **note)
        if self.echo:
            print(line, flush=True)
        if self.heartbeat is not None:
            self.heartbeat.line_printed()
        self.last_step, self.last_loss = step, loss
        self._reset()


class MeasuredDuration:
    """Once, after the first loop that follows the compiling one: `duration.measured_line`
    (the measured seconds per step in place of the FLOP estimate).

    Args:
      pace: the run's `StepPace` (fed by the controller's heartbeat before the actions run).
      train_steps: the last step of the run.
      echo: print the line (the chief); every worker logs it.
    """
    every = 0

    def __init__(self, pace: StepPace, train_steps: int, echo: bool = True):
        self.pace = pace
        self.train_steps = train_steps
        self.echo = echo
        self.line: Optional[str] = None

    def __call__(self, output: LoopOutput) -> None:
        if self.line is not None or not self.pace.measured:
            return
        self.line = duration.measured_line(self.pace, self.train_steps - output.step)
        logging.info(self.line)
        if self.echo:
            print(self.line, flush=True)


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


class HParamsMetrics:
    """After the log and the evaluation: their losses as the hparams session's metrics (the
    dashboard shows the last ones: the run's final train and valid loss and bpc/ppl)."""
    every = 0

    def __init__(self, session: HParamsSession, log: LogProgress, evaluation: Evaluate):
        self.session = session
        self.log = log
        self.evaluation = evaluation

    def __call__(self, output: LoopOutput) -> None:
        if self.log.last_step == output.step:
            self.session.train(output.step, self.log.last_loss)
        if self.evaluation.last_step == output.step:
            self.session.valid(output.step, self.evaluation.last_loss)
