"""`run_benchmark`: warm-up (XLA compilation included), the interleaved timed rounds (each
round times every contender once and measures the matmul peak again), and every figure in one
record, printed as a table and as the BENCHMARK_JSON line."""
import os
import statistics
import sys

import tensorflow as tf

from runners.tools.benchmarks import peak as peaks, peak_memory, report

from runners.tools.benchmarks.configuration import FLAGS, eval_lengths, model_config
from runners.tools.benchmarks.huggingface_contender import HuggingFaceClient, huggingface_figures
from runners.tools.benchmarks.speed import speed
from runners.tools.benchmarks.steps import Steps
from runners.tools.benchmarks.vanilla import compare_vanilla
from txl_tf.devices import step_compilation
from txl_tf.devices.step_compilation import strategy_devices


def _warm_up(steps, hf):
    """Untimed steps of everything that is timed (XLA compilation included)."""
    for contender in (steps, hf) if hf else (steps,):
        contender.time_steps("train", FLAGS.bench_warmup)
        contender.time_steps("eval", FLAGS.bench_warmup)


def _other_compilation(steps):
    """A second `Steps` (same weights, strategy and data) whose step is compiled the other way,
    warmed up; None without --compare_compilation."""
    if not FLAGS.compare_compilation:
        return None
    strategy = steps.trainer.strategy
    mode = None if steps.jit else step_compilation.compiled_mode(strategy)
    other = Steps(steps.config, FLAGS.batch_size, FLAGS.seed, strategy,
                  step_compilation.Choice(mode, "--compare_compilation"))
    other.train_step.profile = None  # --profile_steps counts the steps of the main contender
    other.time_steps("train", FLAGS.bench_warmup)
    return other


def _timed_rounds(steps, hf, precision_dtype, other=None):
    """({kind: step seconds}, float32 `MatmulRate`, `MatmulRate` in the precision's dtype),
    interleaved: each round times every contender once."""
    peak32, peak_p = None, None
    devices = strategy_devices(steps.trainer.strategy)
    size = FLAGS.matmul_size or None
    times = {"train": [], "eval": [], "hf_train": [], "hf_eval": []}
    for _ in range(FLAGS.rounds):
        peak32 = peaks.best_rate(peak32, tf.float32, devices[0], devices, size)
        if precision_dtype != tf.float32:
            peak_p = peaks.best_rate(peak_p, precision_dtype, devices[0], devices, size)
        for kind in ("train", "eval"):
            times[kind] += steps.time_steps(kind, FLAGS.steps)
            if other and kind == "train":
                times.setdefault("other_train", []).extend(other.time_steps(kind, FLAGS.steps))
            if hf:
                times["hf_" + kind] += hf.time_steps(kind, FLAGS.steps)
    return times, peak32, peak_p if precision_dtype != tf.float32 else peak32


def _settings(config, steps, threads, peak32, peak):
    eval_q, eval_m = eval_lengths()
    return {
        "machine": report.versions(), "config": config.to_dict(),
        "batch_size": FLAGS.batch_size,
        "eval_tgt_len": eval_q, "eval_mem_len": eval_m, "jit_compile": steps.jit,
        "jit_compile_flag": FLAGS.jit_compile, "xla_mode": steps.compilation.mode,
        "compilation": steps.compilation.line, "strategy": FLAGS.strategy,
        "replicas": steps.trainer.strategy.num_replicas_in_sync,
        "xla_fusion": FLAGS.xla_fusion, "precision": FLAGS.precision, "threads": threads,
        "rounds": FLAGS.rounds, "steps_per_round": FLAGS.steps,
        "n_params": int(sum(v.numpy().size for v in steps.model.trainable_variables)),
        "matmul_size": peak.size, "matmul_size_float32": peak32.size,
        "matmul_device": peak.device, "matmul_products_per_burst": peak.products,
        "matmul_peak_flops_float32": peak32.flops_per_second,
        "matmul_peak_flops": peak.flops_per_second, "peak_dtype": peak.dtype,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}


def run_benchmark():
    """Times every contender, prints the table and the BENCHMARK_JSON line; returns the record."""
    threads = FLAGS.threads or os.cpu_count()
    config = model_config()
    b, (eval_q, eval_m) = FLAGS.batch_size, eval_lengths()
    steps = Steps(config, b, FLAGS.seed)
    hf = HuggingFaceClient(threads) if FLAGS.compare_huggingface else None
    _warm_up(steps, hf)
    other = _other_compilation(steps)
    times, peak32, peak = _timed_rounds(steps, hf, peaks.precision_dtype(FLAGS.precision), other)
    record = _settings(config, steps, threads, peak32, peak)
    record.update(speed(b * config.tgt_len, times["train"], times["eval"], b * eval_q))
    for key in ("train_tokens_per_s", "train_tokens_per_s_best"):  # per device, as GPUs compare
        record[key + "_per_replica"] = record[key] / record["replicas"]
    record.update(peaks.utilisation(config, record, peak.flops_per_second, b, eval_q, eval_m))
    if other:  # the same step compiled the other way, timed in the same rounds
        median = statistics.median(times["other_train"])
        record["other_compilation"] = {"jit_compile": other.jit, "train_step_s": median,
                                       "train_tokens_per_s": b * config.tgt_len / median,
                                       "train_step_s_all": times["other_train"]}
    if hf:
        huggingface_figures(record, hf, times, b * config.tgt_len, b * eval_q)
    if FLAGS.compare_vanilla:
        record["vanilla_batch_size"] = FLAGS.vanilla_batch_size
        record["vanilla"] = compare_vanilla([int(x) for x in FLAGS.vanilla_lens],
                                            FLAGS.vanilla_batch_size, FLAGS.vanilla_predictions,
                                            FLAGS.rounds, steps.jit)
    peak_memory.device_memory_figures(record, config, steps.trainer.strategy)
    peak_memory.memory_figures(record, config)
    report.print_table(record)
    report.write_json(record)
    return record
