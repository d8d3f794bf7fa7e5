r"""Speed, memory and FLOPs utilisation of txl-tf on the machine at hand.

After warm-up (and XLA compilation) it measures, in one run:
  * training step: forward over a segment [B, Q] with memory [B, M], mean NLL, gradients,
    global-norm clip, Adam update, new memory carried to the next step (the trainer's step),
    compiled as one `tf.function(jit_compile=--jit_compile)`: tokens/s and seconds per step;
  * evaluation step: forward with memory and labels, no dropout: tokens/s;
  * the dense matmul peak of this machine (large float32 / bfloat16 matmuls timed in the same
    run), and the model FLOPs utilisation (MFU) of the training and evaluation steps:
    model FLOPs per token x tokens/s / measured matmul peak;
  * peak resident memory of a training run, in a child process per configuration
    (`--memory_mem_lens`: one child per memory length, to show the growth in mem_len).
Optional comparisons:
  * `--compare_huggingface`: the Hugging Face `transformers` TransfoXL (PyTorch, CPU, same
    threads) on the same configuration, driven by `runners/tools/benchmark_huggingface.py` in its
    own environment (`--hf_python`) and timed interleaved with txl-tf, round by round;
  * `--compare_vanilla`: the paper's Table 9 on this machine: per-token evaluation time of the
    vanilla Transformer (attn_type 2, a window of L tokens shifted by one per prediction, as
    Al-Rfou et al. evaluate) against Transformer-XL with a cached memory of length L.

Prints a readable table and one line `BENCHMARK_JSON {...}` with every figure.

Example (the issue-7 configuration):
  python runners/tools/benchmark.py --n_token=204 --n_layer=6 --d_model=256 --n_head=8 --d_head=32 \
      --d_inner=1024 --tgt_len=128 --mem_len=128 --batch_size=8 --dropout=0.1 \
      --compare_huggingface --compare_vanilla
A training flagfile works as well: --flagfile=runners/enwik8_base.flags --batch_size=2.
"""
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from absl import app, flags

from runners.tools import benchmark_flops
from runners.cli import model_flags as flags_model
from txl_tf.training import xla_clustering
from txl_tf.inference.evaluation import segment_nll
from runners import train as train_runner

FLAGS = flags.FLAGS

# ---- the training runner's flags: model flags, precision, seed, learning_rate, clip, ... --------
# Defined by train.py itself, so a training flagfile (--flagfile=runners/enwik8_base.flags) or
# any training flag works here unchanged; the defaults are the issue-7 benchmark configuration.
train_runner.define_flags(FLAGS)
BENCHMARK_DEFAULTS = dict(n_layer=6, d_model=256, n_head=8, d_head=32, d_inner=1024,
                          tgt_len=128, mem_len=128, dropout=0.1, dropatt=0.0, cutoffs="none",
                          learning_rate=2.5e-4)
for _name, _value in BENCHMARK_DEFAULTS.items():
    FLAGS.set_default(_name, _value)
MODEL_FLAGS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "d_embed", "div_val",
               "cutoffs", "proj_share_all_but_first", "proj_same_dim", "untie_r", "dropout",
               "dropatt", "tgt_len", "mem_len", "clamp_len", "same_length", "attn_type",
               "pre_lnorm", "init", "init_std", "proj_init_std", "init_range", "precision",
               "seed", "learning_rate", "clip", "xla_fusion")

# ---- benchmark flags ------------------------------------------------------------------------------
BENCH_FLAGS = ("n_token", "batch_size", "eval_tgt_len", "eval_mem_len", "steps", "bench_warmup",
               "rounds", "jit_compile", "threads", "matmul_size")
flags.DEFINE_integer("n_token", 204, "Vocabulary size (training takes it from the corpus).")
flags.DEFINE_integer("batch_size", 8, "Batch size B (sequences per step).")
flags.DEFINE_integer("eval_tgt_len", None, "Evaluation segment length (default tgt_len).")
flags.DEFINE_integer("eval_mem_len", None, "Evaluation memory length (default mem_len).")
flags.DEFINE_integer("steps", 4, "Timed steps of each kind per round.")
flags.DEFINE_integer("bench_warmup", 3, "Untimed steps (compilation included) before timing.")
flags.DEFINE_integer("rounds", 5, "Measurement rounds; comparisons are interleaved per round.")
flags.DEFINE_bool("jit_compile", True, "Compile each step with XLA (tf.function(jit_compile)).")
flags.DEFINE_integer("threads", 0, "Intra-op threads for TF (and torch); 0 = number of cores.")
flags.DEFINE_integer("matmul_size", 2048, "Side of the square matmuls that measure the peak.")
flags.DEFINE_list("memory_mem_lens", [],
                  "Memory lengths for the peak-memory table (one child process each, at "
                  "tgt_len and batch_size); empty = just the configured mem_len.")
flags.DEFINE_bool("measure_memory", True, "Measure peak resident memory in child processes.")
flags.DEFINE_bool("compare_huggingface", False,
                  "Also time Hugging Face TransfoXL (runners/tools/benchmark_huggingface.py).")
flags.DEFINE_enum("hf_precision", "float32", ["float32", "bfloat16"],
                  "Hugging Face precision: float32 (the model as shipped) or bfloat16 "
                  "(torch.autocast on CPU, float32 weights and Adam; its adaptive softmax in "
                  "float32).")
flags.DEFINE_string("hf_python", "/work/hfenv/bin/python",
                    "Python of the environment with torch and transformers==4.30.2.")
flags.DEFINE_bool("compare_vanilla", False, "Reproduce the paper's Table 9 on this machine.")
flags.DEFINE_list("vanilla_lens", ["128", "256", "512"], "Attention lengths L for Table 9.")
flags.DEFINE_integer("vanilla_batch_size", 1, "Streams evaluated in parallel for Table 9.")
flags.DEFINE_integer("vanilla_predictions", 8,
                     "Timed sliding-window predictions (forwards) of the vanilla model per L.")
flags.DEFINE_string("json_out", None, "Also write the JSON record to this file.")
flags.DEFINE_enum("child", None, ["memory"], "Internal: run as a measurement child process.")


# ------------------------------------------------------------------------------------------------
def _setup_tensorflow():
    if FLAGS.xla_fusion:
        if FLAGS.jit_compile:
            raise app.UsageError("--xla_fusion compiles only the element-wise ops and leaves the "
                                 "matmuls to oneDNN; it replaces whole-step XLA, so pass "
                                 "--nojit_compile with it.")
        xla_clustering.enable_elementwise_clustering()
    import tensorflow as tf
    if FLAGS.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    return tf


def model_config(**changes):
    """The `TransformerXLConfig` of the training flags (as train.py builds it) and --n_token."""
    return flags_model.config_from_flags(FLAGS, FLAGS.n_token).replace(**changes)


def build_model(config):
    import keras
    import txl_tf
    if FLAGS.precision == "mixed_float16":
        raise app.UsageError("--precision=mixed_float16 needs loss scaling and has no fast path "
                             "on CPU; benchmark float32 or mixed_bfloat16.")
    keras.config.set_dtype_policy(FLAGS.precision)  # as the trainer does
    return txl_tf.TransformerXL(config)


def _eval_lengths():
    q = FLAGS.eval_tgt_len or FLAGS.tgt_len
    m = FLAGS.mem_len if FLAGS.eval_mem_len is None else FLAGS.eval_mem_len
    return q, m


class Steps:
    """The compiled training and evaluation steps of one model, memory carried across calls."""

    def __init__(self, config, batch_size, seed=0):
        import keras
        tf = _setup_tensorflow()
        self.tf = tf
        keras.utils.set_random_seed(seed)
        self.config = config
        self.model = build_model(config)
        self.optimizer = keras.optimizers.Adam(
            learning_rate=FLAGS.learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
        self.optimizer.build(self.model.trainable_variables)
        self.batch_size = batch_size
        q = config.tgt_len
        self.eval_q, self.eval_m = _eval_lengths()
        gen = tf.random.Generator.from_seed(seed)
        self.train_tokens = gen.uniform([batch_size, q + 1], 0, config.n_token, tf.int32)
        self.eval_tokens = gen.uniform([batch_size, self.eval_q + 1], 0, config.n_token,
                                       tf.int32)
        self.train_mems = self.model.init_mems(batch_size)
        self.eval_mems = self.model.init_mems(batch_size, self.eval_m)
        model, optimizer, clip = self.model, self.optimizer, FLAGS.clip
        variables = model.trainable_variables
        eval_m = self.eval_m

        @tf.function(jit_compile=FLAGS.jit_compile)
        def train_step(tokens, mems):
            with tf.GradientTape() as tape:
                out = model(tokens[:, :-1], mems=mems or None, labels=tokens[:, 1:],
                            training=True)
                loss = tf.reduce_mean(out["nll"])
            grads = tape.gradient(loss, variables)
            if clip > 0:
                grads, _ = tf.clip_by_global_norm(grads, clip)
            optimizer.apply_gradients(zip(grads, variables))
            return loss, out["mems"]

        @tf.function(jit_compile=FLAGS.jit_compile)
        def eval_step(tokens, mems):
            nll_sum, count, new_mems = segment_nll(model, tokens[:, :-1], tokens[:, 1:], mems,
                                                   mem_len=eval_m)
            return nll_sum / count, new_mems

        self._train_step, self._eval_step = train_step, eval_step

    def train(self):
        loss, self.train_mems = self._train_step(self.train_tokens, self.train_mems)
        return loss

    def evaluate(self):
        loss, self.eval_mems = self._eval_step(self.eval_tokens, self.eval_mems)
        return loss

    def time_steps(self, kind, steps):
        step = self.train if kind == "train" else self.evaluate
        seconds = []
        for _ in range(steps):
            start = time.perf_counter()
            float(step())  # waits for the result
            seconds.append(time.perf_counter() - start)
        return seconds


# ------------------------------------------------------------------------------------------------
def measure_matmul_peak(tf, size, dtype, repeats=5):
    """Best achieved FLOP/s of a [size, size] x [size, size] matmul (plain TF and XLA)."""
    a = tf.random.normal([size, size], dtype=tf.float32)
    b = tf.random.normal([size, size], dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    flops = 2.0 * size ** 3
    best = 0.0
    for jit in (False, True):
        fn = tf.function(lambda x, y: tf.linalg.matmul(x, y), jit_compile=jit)
        fn(a, b).numpy()
        for _ in range(repeats):
            start = time.perf_counter()
            fn(a, b).numpy()
            best = max(best, flops / (time.perf_counter() - start))
    return best


def _read_vm_hwm_mb():
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024.0


def _reset_vm_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_memory_child():
    """Child process: build, compile and run training steps; report peak RSS figures."""
    import resource
    config = model_config()
    steps = Steps(config, FLAGS.batch_size, FLAGS.seed)
    after_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    steps.time_steps("train", max(FLAGS.bench_warmup, 1))
    after_compile = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    reset = _reset_vm_hwm()
    steps.time_steps("train", 3)
    result = {"mem_len": config.mem_len, "peak_rss_after_build_mb": after_build,
              "peak_rss_after_warmup_mb": after_compile,
              "steady_step_peak_rss_mb": _read_vm_hwm_mb() if reset else None}
    print("CHILD_JSON " + json.dumps(result), flush=True)


def _flag_args(names):
    return [FLAGS[name].serialize() for name in names if FLAGS[name].value is not None]


def measure_memory_child(mem_len):
    """Run a memory child for mem_len; its peak RSS comes from wait4 (this child only)."""
    args = [sys.executable, os.path.abspath(__file__)] + _flag_args(MODEL_FLAGS + BENCH_FLAGS)
    args += [f"--mem_len={0 if FLAGS.attn_type != 0 else mem_len}", "--child=memory"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status
    match = re.search(r"^CHILD_JSON (.*)$", out, re.M)
    if not match:
        raise RuntimeError(f"memory child for mem_len={mem_len} failed:\n{out[-2000:]}")
    result = json.loads(match.group(1))
    result["process_peak_rss_mb"] = usage.ru_maxrss / 1024.0
    return result


# ------------------------------------------------------------------------------------------------
class HuggingFaceClient:
    """runners/tools/benchmark_huggingface.py in --serve mode, in its own environment."""

    def __init__(self, threads):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "benchmark_huggingface.py")
        if not os.path.exists(FLAGS.hf_python):
            raise app.UsageError(
                f"--compare_huggingface needs a Python with torch and transformers==4.30.2 at "
                f"--hf_python={FLAGS.hf_python}; create it with: python3 -m venv /work/hfenv && "
                "/work/hfenv/bin/pip install torch==2.13.0 transformers==4.30.2")
        q, m = _eval_lengths()
        args = [FLAGS.hf_python, script, "--serve", f"--threads={threads}",
                f"--n_token={FLAGS.n_token}", f"--n_layer={FLAGS.n_layer}",
                f"--d_model={FLAGS.d_model}", f"--d_embed={model_config().d_embed}",
                f"--n_head={FLAGS.n_head}", f"--d_head={FLAGS.d_head}",
                f"--d_inner={FLAGS.d_inner}", f"--div_val={FLAGS.div_val}",
                f"--cutoffs={','.join(str(c) for c in model_config().cutoffs)}", f"--untie_r={int(FLAGS.untie_r)}",
                f"--pre_lnorm={int(FLAGS.pre_lnorm)}", f"--same_length={int(FLAGS.same_length)}",
                f"--clamp_len={FLAGS.clamp_len}", f"--dropout={FLAGS.dropout}",
                f"--dropatt={FLAGS.dropatt}", f"--batch_size={FLAGS.batch_size}",
                f"--tgt_len={FLAGS.tgt_len}", f"--mem_len={FLAGS.mem_len}",
                f"--eval_tgt_len={q}", f"--eval_mem_len={m}",
                f"--learning_rate={FLAGS.learning_rate}", f"--clip={FLAGS.clip}",
                f"--seed={FLAGS.seed}", f"--precision={FLAGS.hf_precision}"]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the Hugging Face benchmark process ended; run "
                               "runners/tools/benchmark_huggingface.py by hand to see why")
        return json.loads(line)

    def ask(self, **command):
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def time_steps(self, kind, steps):
        return self.ask(cmd=kind, steps=steps)["seconds"]

    def close(self):
        rss = self.ask(cmd="rss")["peak_rss_mb"]
        self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)
        return rss


# ------------------------------------------------------------------------------------------------
def compare_vanilla(tf, lens, batch_size, predictions, rounds):
    """Per-token evaluation time, vanilla sliding window vs Transformer-XL memory, per L."""
    q = FLAGS.eval_tgt_len or FLAGS.tgt_len
    rows = []
    for length in lens:
        vanilla = build_model(model_config(attn_type=2, mem_len=0, tgt_len=length))
        xl = build_model(model_config(attn_type=0, mem_len=length))
        window = tf.random.uniform([batch_size, length + 1], 0, FLAGS.n_token, tf.int32, seed=1)
        segment = tf.random.uniform([batch_size, q + 1], 0, FLAGS.n_token, tf.int32, seed=2)

        @tf.function(jit_compile=FLAGS.jit_compile)
        def vanilla_forward(tokens, model=vanilla):
            # One prediction: the window of the L previous tokens; only the last is scored,
            # but the model runs over the whole window (what the vanilla model must do).
            return model(tokens[:, :-1], labels=tokens[:, 1:], training=False)["nll"][:, -1]

        @tf.function(jit_compile=FLAGS.jit_compile)
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


# ------------------------------------------------------------------------------------------------
def _versions(tf):
    import keras
    import txl_tf
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
    print(f"{'':26s}{'txl-tf':>14s}" + (f"{'HF torch':>14s}{'ratio':>9s}" if r.get("huggingface")
                                           else ""))
    hf = r.get("huggingface") or {}
    rows = [("train tokens/s (median)", "train_tokens_per_s", 0),
            ("train tokens/s (best)", "train_tokens_per_s_best", 0),
            ("train s/step (median)", "train_step_s", 4),
            ("eval tokens/s (median)", "eval_tokens_per_s", 0),
            ("eval tokens/s (best)", "eval_tokens_per_s_best", 0),
            ("eval s/step (median)", "eval_step_s", 4),
            ("peak RSS MB (train)", "peak_rss_mb", 0)]
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
          f"({r['peak_dtype']}, {r['matmul_size']}^2; float32 "
          f"{r['matmul_peak_flops_float32'] / 1e9:.1f})")
    print(f"{'MFU train (median, best)':26s}{100 * r['mfu_train']:>13.1f}%"
          f"{100 * r['mfu_train_best']:>13.1f}%")
    print(f"{'MFU eval (median, best)':26s}{100 * r['mfu_eval']:>13.1f}%"
          f"{100 * r['mfu_eval_best']:>13.1f}%")
    if r.get("memory"):
        print("\npeak resident memory vs mem_len (training step, tgt_len "
              f"{c['tgt_len']}, batch {r['batch_size']}):")
        print(f"{'mem_len':>8s}{'process peak MB':>17s}{'steady step peak MB':>21s}"
              f"{'after build MB':>16s}")
        for m in r["memory"]:
            print(f"{m['mem_len']:>8d}{_fmt(m['process_peak_rss_mb']):>17s}"
                  f"{_fmt(m['steady_step_peak_rss_mb']):>21s}"
                  f"{_fmt(m['peak_rss_after_build_mb']):>16s}")
    if r.get("vanilla"):
        print("\nTable 9 on this machine: per-token evaluation time (batch "
              f"{r['vanilla_batch_size']}, XL segment {r['vanilla'][0]['xl_segment_len']}):")
        print(f"{'attn len L':>10s}{'vanilla ms/tok':>16s}{'XL ms/tok':>12s}{'slowdown':>10s}")
        for v in r["vanilla"]:
            print(f"{v['attn_len']:>10d}{v['vanilla_ms_per_token']:>16.3f}"
                  f"{v['xl_ms_per_token']:>12.4f}{v['slowdown']:>9.0f}x")
    print()


def run_benchmark():
    tf = _setup_tensorflow()
    threads = FLAGS.threads or os.cpu_count()
    config = model_config()
    eval_q, eval_m = _eval_lengths()
    b = FLAGS.batch_size
    steps = Steps(config, b, FLAGS.seed)
    hf = HuggingFaceClient(threads) if FLAGS.compare_huggingface else None

    # Warm-up (includes XLA compilation) of everything that is timed.
    steps.time_steps("train", FLAGS.bench_warmup)
    steps.time_steps("eval", FLAGS.bench_warmup)
    if hf:
        hf.time_steps("train", FLAGS.bench_warmup)
        hf.time_steps("eval", FLAGS.bench_warmup)

    precision_dtype = tf.bfloat16 if FLAGS.precision == "mixed_bfloat16" else tf.float32
    peak32, peak_p = 0.0, 0.0
    times = {"train": [], "eval": [], "hf_train": [], "hf_eval": []}
    for _ in range(FLAGS.rounds):  # interleaved: each round times every contender once
        peak32 = max(peak32, measure_matmul_peak(tf, FLAGS.matmul_size, tf.float32))
        if precision_dtype != tf.float32:
            peak_p = max(peak_p, measure_matmul_peak(tf, FLAGS.matmul_size, precision_dtype))
        times["train"] += steps.time_steps("train", FLAGS.steps)
        if hf:
            times["hf_train"] += hf.time_steps("train", FLAGS.steps)
        times["eval"] += steps.time_steps("eval", FLAGS.steps)
        if hf:
            times["hf_eval"] += hf.time_steps("eval", FLAGS.steps)
    peak = peak_p if precision_dtype != tf.float32 else peak32

    train_s = statistics.median(times["train"])
    eval_s = statistics.median(times["eval"])
    train_fpt = benchmark_flops.train_flops_per_token(config, b, config.tgt_len, config.mem_len)
    eval_fpt = benchmark_flops.forward_flops_per_token(config, b, eval_q, eval_m)
    record = {
        "machine": _versions(tf), "config": config.to_dict(), "batch_size": b,
        "eval_tgt_len": eval_q, "eval_mem_len": eval_m, "jit_compile": FLAGS.jit_compile,
        "xla_fusion": FLAGS.xla_fusion,
        "precision": FLAGS.precision, "threads": threads, "rounds": FLAGS.rounds,
        "steps_per_round": FLAGS.steps, "n_params": int(sum(
            v.numpy().size for v in steps.model.trainable_variables)),
        "train_step_s": train_s, "train_tokens_per_s": b * config.tgt_len / train_s,
        "train_step_s_all": times["train"],
        "eval_step_s": eval_s, "eval_tokens_per_s": b * eval_q / eval_s,
        "eval_step_s_all": times["eval"],
        "train_tokens_per_s_best": b * config.tgt_len / min(times["train"]),
        "eval_tokens_per_s_best": b * eval_q / min(times["eval"]),
        "train_flops_per_token": train_fpt, "eval_flops_per_token": eval_fpt,
        "matmul_size": FLAGS.matmul_size, "matmul_peak_flops_float32": peak32,
        "matmul_peak_flops": peak, "peak_dtype": precision_dtype.name,
        "mfu_train": train_fpt * b * config.tgt_len / train_s / peak,
        "mfu_eval": eval_fpt * b * eval_q / eval_s / peak,
        "mfu_train_best": train_fpt * b * config.tgt_len / min(times["train"]) / peak,
        "mfu_eval_best": eval_fpt * b * eval_q / min(times["eval"]) / peak,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }
    if hf:
        hf_train_s = statistics.median(times["hf_train"])
        hf_eval_s = statistics.median(times["hf_eval"])
        record["huggingface"] = dict(
            hf.info, precision=FLAGS.hf_precision, train_step_s=hf_train_s, train_tokens_per_s=b * config.tgt_len / hf_train_s,
            eval_step_s=hf_eval_s, eval_tokens_per_s=b * eval_q / hf_eval_s,
            train_step_s_all=times["hf_train"], eval_step_s_all=times["hf_eval"],
            train_tokens_per_s_best=b * config.tgt_len / min(times["hf_train"]),
            eval_tokens_per_s_best=b * eval_q / min(times["hf_eval"]),
            peak_rss_mb=hf.close())
        record["train_speedup_vs_huggingface"] = (record["train_tokens_per_s"]
                                                 / record["huggingface"]["train_tokens_per_s"])
        record["eval_speedup_vs_huggingface"] = (record["eval_tokens_per_s"]
                                                / record["huggingface"]["eval_tokens_per_s"])
    if FLAGS.compare_vanilla:
        record["vanilla_batch_size"] = FLAGS.vanilla_batch_size
        record["vanilla"] = compare_vanilla(tf, [int(x) for x in FLAGS.vanilla_lens],
                                            FLAGS.vanilla_batch_size, FLAGS.vanilla_predictions,
                                            FLAGS.rounds)
    record["peak_rss_mb"] = None
    if FLAGS.measure_memory:
        mem_lens = [int(m) for m in FLAGS.memory_mem_lens] or [config.mem_len]
        record["memory"] = [measure_memory_child(m) for m in mem_lens]
        for m in record["memory"]:
            if m["mem_len"] == config.mem_len:
                record["peak_rss_mb"] = m["process_peak_rss_mb"]
    print_table(record)
    line = json.dumps(record, sort_keys=True)
    print("BENCHMARK_JSON " + line, flush=True)
    if FLAGS.json_out:
        tmp = FLAGS.json_out + ".tmp"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.replace(tmp, FLAGS.json_out)
    return record


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if FLAGS.child == "memory":
        run_memory_child()
        return
    run_benchmark()


if __name__ == "__main__":
    app.run(main)
