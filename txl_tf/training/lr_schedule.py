"""The reference learning-rate schedule: linear warmup, then cosine decay to `min_lr_ratio`.

    step < warmup:   lr * step / warmup
    otherwise:       lr * ((1 - a) * 0.5 * (1 + cos(pi * min(step - warmup, T) / T)) + a)
                     with T = train_steps - warmup and a = min_lr_ratio

(`tf.train.cosine_decay(lr, step - warmup, train_steps - warmup, alpha=min_lr_ratio)` of the
reference `tf/train.py` and `tf/train_gpu.py`.) `step` is the 0-based index of the update.
"""
import math
from typing import Optional

import keras


def warmup_cosine_lr(step: int, learning_rate: float, warmup_steps: int, train_steps: int,
                     min_lr_ratio: float) -> float:
    """Plain-Python value of the schedule at `step` (for tests, ETA and logs)."""
    if warmup_steps > 0 and step < warmup_steps:
        return learning_rate * step / warmup_steps
    decay_steps = max(train_steps - warmup_steps, 1)
    t = min(max(step - warmup_steps, 0), decay_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * t / decay_steps))
    return learning_rate * ((1.0 - min_lr_ratio) * cosine + min_lr_ratio)


@keras.saving.register_keras_serializable(package="txl_tf")
class WarmupCosineSchedule(keras.optimizers.schedules.CosineDecay):
    """`warmup_cosine_lr` as a Keras schedule, evaluated on the optimizer's update counter:
    Keras' `CosineDecay` from 0 with a linear warmup to `learning_rate`, decayed over
    `train_steps - warmup_steps` updates to `min_lr_ratio * learning_rate`.

    Args:
      learning_rate: peak learning rate (> 0).
      warmup_steps: updates of the linear warmup (>= 0).
      train_steps: all updates (>= 1 and >= warmup_steps).
      min_lr_ratio: final / peak learning rate, in [0, 1].

    Raises:
      ValueError: a value outside those ranges.
    """

    def __init__(self, learning_rate: float, warmup_steps: int, train_steps: int,
                 min_lr_ratio: float):
        if learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {learning_rate}.")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}.")
        if train_steps < 1 or train_steps < warmup_steps:
            raise ValueError(f"train_steps ({train_steps}) must be >= 1 and >= warmup_steps "
                             f"({warmup_steps}).")
        if not 0.0 <= min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}.")
        self.learning_rate = float(learning_rate)
        self.train_steps = int(train_steps)
        self.min_lr_ratio = float(min_lr_ratio)
        warm = warmup_steps > 0
        super().__init__(initial_learning_rate=0.0 if warm else self.learning_rate,
                         decay_steps=max(self.train_steps - int(warmup_steps), 1),
                         alpha=self.min_lr_ratio,
                         warmup_target=self.learning_rate if warm else None,
                         warmup_steps=int(warmup_steps))

    def get_config(self):
        return {"learning_rate": self.learning_rate, "warmup_steps": self.warmup_steps,
                "train_steps": self.train_steps, "min_lr_ratio": self.min_lr_ratio}


def schedule_change_notice(before: Optional[dict], schedule: dict, step: int) -> Optional[str]:
    """One line when a resumed run's learning-rate schedule differs from the one its
    checkpoints were trained with, else None.

    Args:
      before: the schedule recorded with the checkpoints (model_dir/schedule.json), or None.
      schedule: this run's learning_rate, warmup_steps, train_steps, min_lr_ratio.
      step: the step resumed from.
    """
    if not isinstance(before, dict):
        return None
    changed = [k for k in schedule if k in before and before[k] != schedule[k]]
    if not changed:
        return None
    try:
        was = warmup_cosine_lr(step, **{k: before.get(k, schedule[k]) for k in schedule})
    except (TypeError, ValueError):
        return None
    now = warmup_cosine_lr(step, **schedule)
    return ("note: resuming with " + ", ".join(f"--{k}={schedule[k]} (was {before[k]})"
                                               for k in changed)
            + f": the learning-rate schedule is recomputed over {schedule['train_steps']} steps "
            f"from step {step} on (learning rate {now:.3e} at step {step} instead of {was:.3e}).")


def schedule_flags(options) -> dict:
    """The schedule's arguments of a run's `TrainOptions` (what model_dir/schedule.json
    records): learning_rate, warmup_steps, train_steps, min_lr_ratio."""
    return dict(learning_rate=options.learning_rate, warmup_steps=options.warmup_steps,
                train_steps=options.train_steps, min_lr_ratio=options.min_lr_ratio)
