"""`TrainingRun`: the parts of one training run, filled in as `txl_tf/commands/train.py`
assembles them and read by the parts built after them (actions, run record, reporting)."""
import dataclasses
from typing import Any, Optional

import tensorflow as tf

from txl_tf.training import checkpoints as checkpoints_lib
from txl_tf.training.measurement import duration
from txl_tf.devices import step_compilation
from txl_tf.training.data_source import DataSource
from txl_tf.training.reporting.hparams_session import HParamsSession
from txl_tf.training.placement import Placement
from txl_tf.model.config import TransformerXLConfig
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.training.trainer import Trainer


@dataclasses.dataclass
class TrainingRun:
    """What a run is built from and what its steps build, handed from part to part.

    Attributes:
      options: the run's `TrainOptions` (`txl_tf/commands/train_options.py`).
      strategy, place: the distribution strategy and this worker's `Placement`.
      data, layouts: the data and its {"train", "valid"} record layouts.
      config: the model configuration (its vocabulary the data's).
      model, trainer, compilation, checkpoints: the model, its `Trainer`, how the trainer's
        step is compiled, the run's `TrainCheckpoints`.
      actions: by name: (profile,) throughput, log, duration, evaluation, save, best, hparams.
      hparams: the run's TensorBoard HPARAMS session.
      memory_estimate: the accumulation chooser's estimate (`batch_fit`).
      step_estimate: the FLOP estimate of a step made before the first one (chief), or None.
    """
    options: Any
    strategy: tf.distribute.Strategy
    place: Placement
    data: DataSource
    layouts: dict
    config: TransformerXLConfig
    model: Optional[TransformerXL] = None
    trainer: Optional[Trainer] = None
    compilation: Optional[step_compilation.Choice] = None
    checkpoints: Optional[checkpoints_lib.TrainCheckpoints] = None
    actions: Optional[dict] = None
    hparams: Optional[HParamsSession] = None
    memory_estimate: Optional[dict] = None
    step_estimate: Optional[duration.StepEstimate] = None
