"""The tiny model and data settings the tests share.

Two sizes: `tiny_config` / `tiny_model` for tests that call the model directly (D 16, a forward
pass takes milliseconds), and `TRAIN_SIZES` for tests that train (`txl_tf.commands.train.train` or
`runners/train.py`) on the `SYNTHETIC` corpus long enough to see the loss fall.

Example:
  >>> model = tiny_model(cutoffs=(10, 30), div_val=2)
  >>> out = model(tf.zeros([2, 6], tf.int32), mems=model.init_mems(2))
  >>> out["log_probs"].shape
  TensorShape([2, 6, 50])
"""
import keras
import numpy as np
import tensorflow as tf

import tf_records
import txl_tf
from txl_tf.model.config_template import ConfigTemplate

TINY_MODEL = dict(n_token=50, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, tgt_len=6,
                  mem_len=6, dropout=0.0, dropatt=0.0, init_std=0.2)

TRAIN_SIZES = dict(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64, tgt_len=16,
                   mem_len=16)


def train_flags(**changes):
    """`TRAIN_SIZES` with `changes` (any model flag) as `--name=value` flags, e.g. for a
    `runners/train.py` subprocess: `train_flags(d_model=48, dropout=0.0)`."""
    return [f"--{name}={value}" for name, value in dict(TRAIN_SIZES, **changes).items()]


TRAIN_FLAGS = train_flags()

# A periodic 16-symbol corpus of 12,000 training and 2,000 evaluation tokens: learnable in a
# few dozen steps of a TRAIN_SIZES model.
SYNTHETIC = {"train_tokens": 12_000, "eval_tokens": 2_000, "num_symbols": 16, "period": 24}
SYNTHETIC_FLAGS = [f"--corpus_option={name}={value}" for name, value in SYNTHETIC.items()]


def tiny_config(**changes):
    """`TINY_MODEL` with `changes` (any `TransformerXLConfig` field) as a config."""
    return txl_tf.TransformerXLConfig(**dict(TINY_MODEL, **changes))


def tiny_model(seed=0, **changes):
    """A `TransformerXL` of `tiny_config(**changes)`, its weights drawn after seeding `seed`."""
    keras.utils.set_random_seed(seed)
    return txl_tf.TransformerXL(tiny_config(**changes))


def stream_batches(config, batch_size, steps):
    """`steps` consecutive batches of `batch_size` random token streams (seed 0), the last one's
    first row ending in 3 padding labels (-1).

    Returns:
      [{"inputs": int32 [batch_size, Q], "labels": int32 [batch_size, Q]}] * steps (NumPy),
      Q = config.tgt_len, ids below config.n_token.
    """
    rng = np.random.default_rng(0)
    t = config.tgt_len
    stream = rng.integers(0, config.n_token, size=(batch_size, steps * t + 1)).astype(np.int32)
    out = []
    for s in range(steps):
        labels = stream[:, s * t + 1:(s + 1) * t + 1].copy()
        if s == steps - 1:
            labels[0, -3:] = -1  # a padded tail (last_segment=pad)
        out.append({"inputs": stream[:, s * t:(s + 1) * t], "labels": labels})
    return out


def assert_same_state(got, want):
    """Two runs of the same float32 training steps (e.g. compiled by XLA and not) left the same
    state: weights, optimizer slots and memories, each a list of arrays, within rounding."""
    for name, atol, rtol in (("weights", 1e-5, 1e-4), ("slots", 1e-8, 1e-3),
                             ("mems", 1e-4, 1e-4)):
        assert len(got[name]) == len(want[name]), name
        for a, b in zip(got[name], want[name]):
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, err_msg=name)


def train_step(model):
    """A training step of `model`, `(tokens, labels, mems)` [B, Q], [B, Q], L x [B, M, D] ->
    (mean NLL, gradients of every trainable weight, the new memory), as a plain Python
    function: called directly, it runs eagerly,
    op by op through TensorFlow's kernels (no graph to trace and optimise: the cheap reference of
    a compiled step); called inside a `tf.function`, it is traced into that function, so several
    models' steps can share one XLA compilation."""
    def step(tokens, labels, mems):
        with tf.GradientTape() as tape:
            out = model(tokens, mems=mems, labels=labels, training=True)
            loss = tf.reduce_mean(out["nll"])
        grads = tape.gradient(loss, model.trainable_variables)
        return loss, grads, out["mems"]
    return step


def reset_to_start(trainer, start):
    """Puts a `Trainer` back at its start, so that its traced (or compiled) loop can run the
    same training again: the model's variables `start` (the arrays of `model.variables`,
    dropout seeds included), Adam's zero slots and step count, step 0."""
    for variable, value in zip(trainer.model.variables, start):
        variable.assign(value)
    optimizer = trainer.optimizer
    for variable in [optimizer.iterations, *optimizer._momentums, *optimizer._velocities]:
        variable.assign(tf.zeros_like(variable))
    trainer.step.assign(0)


def train_config(**changes):
    """The `ConfigTemplate` of `txl_tf.commands.train.train` for a `TRAIN_SIZES` model without
    dropout, with `changes` (any config field but n_token and cutoffs: those are the data's)."""
    return ConfigTemplate.of(**{**TRAIN_SIZES, "dropout": 0.0, "dropatt": 0.0, **changes})


def prepare_synthetic(data_dir, layouts=None):
    """Prepares the `SYNTHETIC` corpus in `data_dir` (vocabulary, corpus info, token caches and
    the records of `layouts`, `{split: RecordLayout}`); returns `data_dir` as a string."""
    tf_records.prepare("synthetic", data_dir, tf_records.RecordPlan(layouts or {}),
                       download=False, progress=False,
                       **SYNTHETIC)
    return str(data_dir)
