"""TensorBoard scalars/text and console lines of a training run (written by the chief only).

Event files go to `model_dir/train/` (training scalars, the configuration text) and
`model_dir/valid/` (validation scalars); `tensorboard --logdir <model_dir>` shows both runs.
Scalar tags: loss, the level's unit (bpc, ppl or bits_per_token; `txl_tf/loss/loss_report.py`),
learning_rate, grad_norm, tokens_per_sec (train) and loss and the unit (valid).
"""
import os
from typing import Optional

import tensorflow as tf
from absl import logging

from txl_tf.loss.loss_report import format_loss
# The unit of a level (bpc, ppl or bits_per_token) and a loss in it: txl_tf/loss/loss_report.py.
from txl_tf.loss.loss_report import unit_name as metric_name  # noqa: F401
from txl_tf.loss.loss_report import unit_value as metric_value
from txl_tf.storage.model_dir_layout import TRAIN_EVENTS_DIR, VALID_EVENTS_DIR


def format_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunSummaries:
    """Writers of one run. With `enabled=False` (non-chief workers) nothing is written."""

    def __init__(self, model_dir: str, level: str, enabled: bool = True):
        self.level = level
        self.metric = metric_name(level)
        self.enabled = enabled
        self.train_dir = os.path.join(model_dir, TRAIN_EVENTS_DIR)
        self.valid_dir = os.path.join(model_dir, VALID_EVENTS_DIR)
        if enabled:
            self._train = tf.summary.create_file_writer(self.train_dir)
            self._valid = tf.summary.create_file_writer(self.valid_dir)

    def text(self, tag: str, text: str, step: int = 0) -> None:
        if self.enabled:
            with self._train.as_default():
                tf.summary.text(tag, tf.constant(text), step=step)
            self._train.flush()

    def train(self, step: int, loss: float, learning_rate: float, grad_norm: float,
              tokens_per_sec: float) -> None:
        if not self.enabled:
            return
        with self._train.as_default():
            tf.summary.scalar("loss", loss, step=step)
            tf.summary.scalar(self.metric, metric_value(loss, self.level), step=step)
            tf.summary.scalar("learning_rate", learning_rate, step=step)
            tf.summary.scalar("grad_norm", grad_norm, step=step)
            tf.summary.scalar("tokens_per_sec", tokens_per_sec, step=step)
        self._train.flush()

    def valid(self, step: int, loss: float) -> None:
        if not self.enabled:
            return
        with self._valid.as_default():
            tf.summary.scalar("loss", loss, step=step)
            tf.summary.scalar(self.metric, metric_value(loss, self.level), step=step)
        self._valid.flush()

    def console(self, step: int, train_steps: int, loss: float, learning_rate: float,
                tokens_per_sec: float, eta_seconds: Optional[float], eta_note: str = "") -> str:
        """The step log's line; `eta_note` says what the ETA's pace is when it is not measured
        after compilation (e.g. 'compilation included')."""
        line = (f"step {step:>{len(str(train_steps))}}/{train_steps} | "
                f"{format_loss(loss, self.level)} | lr {learning_rate:.3e} | "
                f"{tokens_per_sec:,.0f} tok/s | ETA {format_duration(eta_seconds or 0)}"
                + (f" ({eta_note})" if eta_note else ""))
        logging.info(line)
        return line
