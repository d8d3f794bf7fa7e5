"""A training run as a session of TensorBoard's HPARAMS dashboard (the hparams plugin).

The run's model directory itself is the session's run: its events hold the experiment's
description (`hparams_config`: the hyperparameters and the metrics), the session's values
(`hparams`: the model configuration and the run options) and the metrics, scalars
`hparams/train_loss`, `hparams/valid_loss` and their bpc or ppl, written as the run logs and
validates: the dashboard shows each metric's last value. So `tensorboard --logdir runs` compares
every run below `runs` side by side (the ablation: one session per variant), and
`tensorboard --logdir MODEL_DIR` shows the one run.

Example:
  >>> session = HParamsSession("runs/default", "char")
  >>> session.start(run_hparams(config, options, {"dataset": "enwik8"}))
  >>> session.train(step=200, loss=1.3)
  >>> session.valid(step=200, loss=1.25)
"""
import dataclasses
import os
from typing import Mapping, Optional

import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

from txl_tf.training.reporting.tensorboard import metric_name, metric_value

TAG_PREFIX = "hparams/"
# Run options that describe where a run is, not how it trains.
_NOT_HPARAMS = ("flags_text", "model_dir")


def _value(value):
    """A value the hparams plugin takes: bool, int, float or str (others as their text)."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def run_hparams(config, options, extra: Optional[Mapping] = None) -> dict:
    """The hyperparameters of a run: {name: bool | int | float | str}.

    Args:
      config: the run's `TransformerXLConfig` (every field, e.g. n_layer, d_model, cutoffs).
      options: its `TrainOptions` (every field but model_dir and flags_text).
      extra: more values (the data: dataset, level, vocabulary size).
    """
    values = dict(config.to_dict())
    values.update({k: v for k, v in dataclasses.asdict(options).items()
                   if k not in _NOT_HPARAMS})
    values.update(extra or {})
    return {name: _value(value) for name, value in values.items()}


class HParamsSession:
    """The hparams plugin's session of one run (written by the chief only).

    Args:
      model_dir: the run's model directory: the session's run.
      level: the data's level (the metric is bpc for characters and bytes, ppl for words).
      enabled: False on non-chief workers (nothing is written).
    """

    def __init__(self, model_dir: str, level: str, enabled: bool = True):
        self.model_dir = model_dir
        self.level = level
        self.metric = metric_name(level)
        self.enabled = enabled
        self._writer = tf.summary.create_file_writer(model_dir) if enabled else None

    def metric_tags(self) -> list:
        """The session's metrics: train and valid loss, then train and valid bpc or ppl."""
        return [f"{TAG_PREFIX}{split}_{what}" for what in ("loss", self.metric)
                for split in ("train", "valid")]

    def start(self, hparams: Mapping) -> None:
        """Writes the experiment's description and the session's hyperparameters; the session
        is named after the model directory (the ablation's: after the variant).

        Args:
          hparams: `run_hparams` of the run.
        """
        if not self.enabled:
            return
        name = os.path.basename(os.path.abspath(self.model_dir))
        metrics = [hp.Metric(tag, display_name=tag[len(TAG_PREFIX):].replace("_", " "))
                   for tag in self.metric_tags()]
        with self._writer.as_default():
            hp.hparams_config(hparams=[hp.HParam(k) for k in hparams], metrics=metrics)
            hp.hparams(dict(hparams), trial_id=name)
        self._writer.flush()

    def _scalars(self, split: str, step: int, loss: float) -> None:
        if not self.enabled:
            return
        with self._writer.as_default():
            tf.summary.scalar(f"{TAG_PREFIX}{split}_loss", loss, step=step)
            tf.summary.scalar(f"{TAG_PREFIX}{split}_{self.metric}",
                              metric_value(loss, self.level), step=step)
        self._writer.flush()

    def train(self, step: int, loss: float) -> None:
        """The training loss (and bpc/ppl) over the last logged steps at `step`."""
        self._scalars("train", step, loss)

    def valid(self, step: int, loss: float) -> None:
        """The validation loss (and bpc/ppl) at `step`."""
        self._scalars("valid", step, loss)
