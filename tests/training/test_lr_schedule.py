"""The warmup + cosine schedule against the reference formula and Keras' own CosineDecay."""
import math

import keras
import numpy as np
import pytest

from txl_tf.training.lr_schedule import WarmupCosineSchedule, warmup_cosine_lr


@pytest.mark.parametrize("warmup", [0, 10])
def test_schedule_matches_reference_formula(warmup):
    lr, total, alpha = 2.5e-4, 100, 0.004
    schedule = WarmupCosineSchedule(lr, warmup, total, alpha)
    # Independent: Keras' CosineDecay for the decay phase, the linear ramp for warmup.
    cosine = keras.optimizers.schedules.CosineDecay(lr, total - warmup, alpha=alpha)
    for step in [0, 1, 5, 9, 10, 11, 50, 99, 100, 150]:
        expected = (lr * step / warmup if step < warmup
                    else float(cosine(min(step - warmup, total - warmup))))
        assert float(schedule(step)) == pytest.approx(expected, rel=1e-5, abs=1e-12)
        assert warmup_cosine_lr(step, lr, warmup, total, alpha) == pytest.approx(
            expected, rel=1e-5, abs=1e-12)


def test_schedule_end_points():
    s = WarmupCosineSchedule(1.0, 4, 20, 0.01)
    assert float(s(0)) == 0.0
    assert float(s(2)) == pytest.approx(0.5)
    assert float(s(4)) == pytest.approx(1.0)
    assert float(s(12)) == pytest.approx(0.99 * 0.5 * (1 + math.cos(math.pi * 0.5)) + 0.01)
    assert float(s(20)) == pytest.approx(0.01)
    assert np.isclose(float(s(1000)), 0.01)


@pytest.mark.parametrize("kwargs", [dict(learning_rate=0.0), dict(warmup_steps=-1),
                                    dict(train_steps=5, warmup_steps=10),
                                    dict(min_lr_ratio=1.5)])
def test_schedule_rejects_bad_values(kwargs):
    values = dict(learning_rate=1e-3, warmup_steps=0, train_steps=10, min_lr_ratio=0.0)
    values.update(kwargs)
    with pytest.raises(ValueError):
        WarmupCosineSchedule(**values)
