"""The dense matmul peak of the run's first device and the model FLOPs utilisation against it.

The peak is timed in the same run by `txl_tf/training/measurement/matmul_rate.py` (the rate training's
duration estimate uses), in float32 and in the dtype of --precision; the MFU of a step is its
model FLOPs per token (txl_tf/model/flops.py) x tokens/s / the peak.
"""
import tensorflow as tf

from txl_tf.model import flops as model_flops
from txl_tf.training.measurement.device_memory import reset_peaks
from txl_tf.training.measurement.matmul_rate import measure_matmul_rate

# The dtype of the matrix products of each --precision (float32 for any other; mixed_float16
# runs with loss scaling, as train.py).
PRECISION_DTYPES = {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}


def precision_dtype(precision):
    """The dtype of the matrix products under `precision` (a Keras dtype policy name)."""
    return PRECISION_DTYPES.get(precision, tf.float32)


def best_rate(best, dtype, device, devices, size=None):
    """The better of `best` (a `MatmulRate` or None) and a new measurement on `device`
    (square products of side `size`, or grown when None); the accelerators' peak memory starts
    afresh after it (it counts the steps only)."""
    rate = measure_matmul_rate(dtype, device, size=size)
    reset_peaks(devices)
    return rate if best is None or rate.flops_per_second > best.flops_per_second else best


def utilisation(config, record, peak, batch_size, eval_tgt_len, eval_mem_len):
    """Model FLOPs per token and the MFU of the median and best steps.

    Args:
      config: the model configuration (its tgt_len and mem_len are the training step's).
      record: the speed figures (`train_tokens_per_s`, `eval_tokens_per_s` and their `_best`).
      peak: the matmul peak, FLOP/s.
      batch_size: streams B of a step.
      eval_tgt_len, eval_mem_len: the evaluation step's segment and memory lengths.

    Returns:
      {train,eval}_flops_per_token and mfu_{train,eval}[_best].
    """
    b = batch_size
    train_fpt = model_flops.train_flops_per_token(config, b, config.tgt_len, config.mem_len)
    eval_fpt = model_flops.forward_flops_per_token(config, b, eval_tgt_len, eval_mem_len)
    return dict(train_flops_per_token=train_fpt, eval_flops_per_token=eval_fpt,
                mfu_train=train_fpt * record["train_tokens_per_s"] / peak,
                mfu_eval=eval_fpt * record["eval_tokens_per_s"] / peak,
                mfu_train_best=train_fpt * record["train_tokens_per_s_best"] / peak,
                mfu_eval_best=eval_fpt * record["eval_tokens_per_s_best"] / peak)
