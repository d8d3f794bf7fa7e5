"""The benchmark's output: a readable table and one line `BENCHMARK_JSON {...}` with every
figure (also written to --json_out), and the machine the figures were measured on."""
import json
import os
import platform
import re

import keras
import tensorflow as tf

import txl_tf
from runners.tools.benchmarks.configuration import FLAGS
from txl_tf.storage.atomic_writes import write_text_atomic


def versions():
    """The machine and the libraries: versions, CPU, cores, oneDNN setting, load average."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    return {"tensorflow": tf.__version__, "keras": keras.__version__, "txl_tf": txl_tf.__version__,
            "python": platform.python_version(), "cpu": cpu, "cores": os.cpu_count(),
            "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
            "load_average_1min": os.getloadavg()[0]}


def _fmt(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


def print_table(r):
    """Prints the record `r` of `run_benchmark` as a table."""
    c = r["config"]
    print()
    print(f"txl-tf benchmark  ({r['machine']['cpu']}, {r['machine']['cores']} cores, "
          f"TF {r['machine']['tensorflow']}, Keras {r['machine']['keras']}, "
          f"load avg {r['machine']['load_average_1min']:.2f})")
    print(f"model: {c['n_layer']} layers, d_model {c['d_model']}, {c['n_head']}x{c['d_head']} "
          f"heads, d_inner {c['d_inner']}, n_token {c['n_token']}; batch {r['batch_size']}, "
          f"tgt_len {c['tgt_len']}, mem_len {c['mem_len']}, eval tgt/mem {r['eval_tgt_len']}/"
          f"{r['eval_mem_len']}; jit_compile={r['jit_compile']}, xla_fusion={r['xla_fusion']}, "
          f"precision {r['precision']}, threads {r['threads']}"
          + (f"; Hugging Face {r['huggingface']['precision']}" if r.get("huggingface") else ""))
    print(f"strategy {r['strategy']} ({r['replicas']} replica(s)); {r['compilation']}")
    print(f"{'':26s}{'txl-tf':>14s}" + (f"{'HF torch':>14s}{'ratio':>9s}" if r.get("huggingface")
                                           else ""))
    hf = r.get("huggingface") or {}
    rows = [("train tokens/s (median)", "train_tokens_per_s", 0),
            ("train tokens/s (best)", "train_tokens_per_s_best", 0),
            ("train s/step (median)", "train_step_s", 4),
            *([(f"train tokens/s/replica (x{r['replicas']})", "train_tokens_per_s_per_replica",
                0)] if r["replicas"] > 1 else []),
            ("eval tokens/s (median)", "eval_tokens_per_s", 0),
            ("eval tokens/s (best)", "eval_tokens_per_s_best", 0),
            ("eval s/step (median)", "eval_step_s", 4),
            ("peak RSS MB (train)", "peak_rss_mb", 0),
            ("peak accelerator MB", "accelerator_peak_memory_mb", 0),
            ("estimated step MB", "estimated_peak_memory_mb", 0)]
    for label, key, digits in rows:
        line = f"{label:26s}{_fmt(r.get(key), digits):>14s}"
        if hf:
            line += f"{_fmt(hf.get(key), digits):>14s}"
            if "tokens_per_s" in key and hf.get(key):
                line += f"{r[key] / hf[key]:>8.2f}x"
        print(line)
    print(f"{'model GFLOP/token train':26s}{r['train_flops_per_token'] / 1e9:>14.4f}")
    print(f"{'model GFLOP/token eval':26s}{r['eval_flops_per_token'] / 1e9:>14.4f}")
    print(f"{'matmul peak GFLOP/s':26s}{r['matmul_peak_flops'] / 1e9:>14.1f}  "
          f"({r['peak_dtype']}, {r['matmul_size']}^2 on {r['matmul_device']}; float32 "
          f"{r['matmul_peak_flops_float32'] / 1e9:.1f}, {r['matmul_size_float32']}^2)")
    print(f"{'MFU train (median, best)':26s}{100 * r['mfu_train']:>13.1f}%"
          f"{100 * r['mfu_train_best']:>13.1f}%")
    print(f"{'MFU eval (median, best)':26s}{100 * r['mfu_eval']:>13.1f}%"
          f"{100 * r['mfu_eval_best']:>13.1f}%")
    if r.get("other_compilation"):
        o = r["other_compilation"]
        print(f"{'train tokens/s, jit ' + ('on' if o['jit_compile'] else 'off'):26s}"
              f"{_fmt(o['train_tokens_per_s']):>14s}  (interleaved; "
              f"{r['train_tokens_per_s'] / o['train_tokens_per_s']:.2f}x for jit "
              f"{'on' if r['jit_compile'] else 'off'})")
    if r.get("memory"):
        print("\npeak resident memory vs mem_len (training step, tgt_len "
              f"{c['tgt_len']}, batch {r['batch_size']}):")
        print(f"{'mem_len':>8s}{'TF+Keras MB':>13s}{'after build MB':>16s}"
              f"{'process peak MB':>17s}{'steady step peak MB':>21s}")
        for m in r["memory"]:
            print(f"{m['mem_len']:>8d}{_fmt(m.get('rss_after_import_mb')):>13s}"
                  f"{_fmt(m['peak_rss_after_build_mb']):>16s}"
                  f"{_fmt(m['process_peak_rss_mb']):>17s}"
                  f"{_fmt(m['steady_step_peak_rss_mb']):>21s}")
        print("(steady: later steps, after malloc_trim returned the compilation's freed heap)")
    if r.get("vanilla"):
        print("\nTable 9 on this machine: per-token evaluation time (batch "
              f"{r['vanilla_batch_size']}, XL segment {r['vanilla'][0]['xl_segment_len']}):")
        print(f"{'attn len L':>10s}{'vanilla ms/tok':>16s}{'XL ms/tok':>12s}{'slowdown':>10s}")
        for v in r["vanilla"]:
            print(f"{v['attn_len']:>10d}{v['vanilla_ms_per_token']:>16.3f}"
                  f"{v['xl_ms_per_token']:>12.4f}{v['slowdown']:>9.0f}x")
    print()


def write_json(record):
    """Prints `BENCHMARK_JSON {...}` and writes the record to --json_out (atomically)."""
    line = json.dumps(record, sort_keys=True)
    print("BENCHMARK_JSON " + line, flush=True)
    if FLAGS.json_out:
        write_text_atomic(FLAGS.json_out, line + "\n")
