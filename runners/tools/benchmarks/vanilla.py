"""The paper's Table 9 on this machine: per-token evaluation time of the vanilla Transformer
(the `vaswani` variant of txl_tf/model/attention_variants.py, a window of L tokens shifted by one
per prediction, as Al-Rfou et al. evaluate) against Transformer-XL (`ours`) with a cached memory of
length L."""
import statistics
import time

import tensorflow as tf

from runners.tools.benchmarks.configuration import FLAGS, build_model, eval_lengths, model_config
from txl_tf.model.attention_variants import OURS, VASWANI


def compare_vanilla(lens, batch_size, predictions, rounds, jit):
    """Per-token evaluation time, vanilla sliding window vs Transformer-XL memory, per L.

    Args:
      lens: attention lengths L.
      batch_size: streams evaluated in parallel.
      predictions: timed sliding-window predictions (forwards) of the vanilla model per round.
      rounds: measurement rounds.
      jit: whether XLA compiles both forwards.

    Returns:
      One row per L: attn_len, vanilla_ms_per_token, xl_ms_per_token, slowdown, xl_segment_len.
    """
    q, _ = eval_lengths()
    rows = []
    for length in lens:
        vanilla = build_model(VASWANI.configure(model_config(), mem_len=0, tgt_len=length))
        xl = build_model(OURS.configure(model_config(), mem_len=length))
        window = tf.random.uniform([batch_size, length + 1], 0, FLAGS.n_token, tf.int32, seed=1)
        segment = tf.random.uniform([batch_size, q + 1], 0, FLAGS.n_token, tf.int32, seed=2)

        @tf.function(jit_compile=jit)
        def vanilla_forward(tokens, model=vanilla):
            # One prediction: the window of the L previous tokens; only the last is scored,
            # but the model runs over the whole window (what the vanilla model must do).
            return model(tokens[:, :-1], labels=tokens[:, 1:], training=False)["nll"][:, -1]

        @tf.function(jit_compile=jit)
        def xl_forward(tokens, mems, model=xl, mem_len=length):
            out = model(tokens[:, :-1], mems=mems, labels=tokens[:, 1:], training=False,
                        mem_len=mem_len)
            return out["nll"], out["mems"]

        mems = xl.init_mems(batch_size, length)
        for _ in range(2):
            vanilla_forward(window).numpy()
            nll, mems = xl_forward(segment, mems)
            nll.numpy()
        v_times, x_times = [], []
        for _ in range(rounds):
            for _ in range(predictions):
                start = time.perf_counter()
                vanilla_forward(window).numpy()
                v_times.append(time.perf_counter() - start)
            for _ in range(max(2, predictions // 4)):
                start = time.perf_counter()
                nll, mems = xl_forward(segment, mems)
                nll.numpy()
                x_times.append(time.perf_counter() - start)
        v_token = statistics.median(v_times) / batch_size
        x_token = statistics.median(x_times) / (batch_size * q)
        rows.append({"attn_len": length, "vanilla_ms_per_token": v_token * 1e3,
                     "xl_ms_per_token": x_token * 1e3, "slowdown": v_token / x_token,
                     "xl_segment_len": q})
    return rows
