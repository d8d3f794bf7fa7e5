r"""Speed, memory and FLOPs utilisation of txl-tf on the machine at hand.

After warm-up (and XLA compilation) it measures, in one run:
  * training step: the step train.py runs, `Trainer.train` of txl_tf.training.trainer over a
    segment [B, Q] with memory [B, M]: token-mean NLL, all-reduced gradients, global-norm clip,
    the training optimizer and learning-rate schedule, gradient accumulation, the new memory
    carried to the next step; compiled as training compiles it (`--jit_compile`, `--xla_fusion`
    and `--strategy` as in train.py): tokens/s (and per replica when several run) and seconds
    per step;
  * evaluation step: forward with memory and labels, no dropout, one replica, compiled whole by
    XLA when the training step is: tokens/s;
  * the dense matmul peak of the first device of the run (float32 and the precision's dtype,
    timed in the same run by `txl_tf/training/matmul_rate.py`, the rate training's duration
    estimate uses), and the model FLOPs utilisation (MFU) of the training and evaluation
    steps: model FLOPs per token x tokens/s / measured matmul peak;
  * peak resident memory of a training run, in a child process per configuration
    (`--memory_mem_lens`: one child per memory length, to show the growth in mem_len), and on
    an accelerator its allocator's peak over the timed steps
    (`txl_tf/training/device_memory.py`), next to the estimate with which training chooses its
    gradient accumulation (`txl_tf/training/batch_fit.py`).
Optional comparisons:
  * `--compare_huggingface`: the Hugging Face `transformers` TransfoXL (PyTorch, CPU, same
    threads) on the same configuration, driven by `runners/tools/benchmark_huggingface.py` in its
    own environment (`--hf_python`) and timed interleaved with txl-tf, round by round;
  * `--compare_vanilla`: the paper's Table 9 on this machine: per-token evaluation time of the
    vanilla Transformer (the `vaswani` variant of txl_tf/attention_variants.py, a window of L
    tokens shifted by one per prediction, as Al-Rfou et al. evaluate) against Transformer-XL
    (`ours`) with a cached memory of length L.

Prints a readable table and one line `BENCHMARK_JSON {...}` with every figure.

Example (the default configuration, spelled out):
  python runners/tools/benchmark.py --n_token=204 --n_layer=6 --d_model=256 --n_head=8 --d_head=32 \
      --d_inner=1024 --tgt_len=128 --mem_len=128 --batch_size=8 --dropout=0.1 \
      --compare_huggingface --compare_vanilla
A training flagfile works as well: --flagfile=runners/enwik8_base.flags --batch_size=2.
"""
import ctypes
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from runners import cli

cli.quiet_start()

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

import txl_tf  # noqa: E402
from runners.cli import model_flags, train_flags  # noqa: E402
from txl_tf import model_flops  # noqa: E402
from txl_tf.attention_variants import OURS, VASWANI  # noqa: E402
from txl_tf.inference.evaluation import segment_nll  # noqa: E402
from txl_tf.atomic_writes import write_text_atomic  # noqa: E402
from txl_tf.commands.train_options import TrainError, profile_range  # noqa: E402
from txl_tf.training import distribute, step_compilation  # noqa: E402
from txl_tf.training.profiling import ProfileSteps  # noqa: E402
from txl_tf.training.lr_schedule import WarmupCosineSchedule  # noqa: E402
from txl_tf.training.batch_fit import memory_estimate  # noqa: E402
from txl_tf.training.device_memory import peak_memory, reset_peaks  # noqa: E402
from txl_tf.training.matmul_rate import measure_matmul_rate  # noqa: E402
from txl_tf.training.step_compilation import strategy_devices  # noqa: E402
from txl_tf.training.optimizer import make_optimizer  # noqa: E402
from txl_tf.training.trainer import Trainer  # noqa: E402

FLAGS = flags.FLAGS

# ---- the training flags: model flags, precision, seed, learning_rate, clip, ... -----------------
# The flags of train.py, so that a training flagfile (--flagfile=runners/enwik8_base.flags) or
# any training flag works here unchanged; the defaults are the benchmark configuration below.
train_flags.define_flags(FLAGS)
BENCHMARK_DEFAULTS = dict(n_layer=6, d_model=256, n_head=8, d_head=32, d_inner=1024,
                          tgt_len=128, mem_len=128, dropout=0.1, dropatt=0.0, cutoffs="none",
                          learning_rate=2.5e-4)
for _name, _value in BENCHMARK_DEFAULTS.items():
    FLAGS.set_default(_name, _value)
MODEL_FLAGS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "d_embed", "div_val",
               "cutoffs", "proj_share_all_but_first", "proj_same_dim", "untie_r", "dropout",
               "dropatt", "tgt_len", "mem_len", "clamp_len", "same_length", "attn_type",
               "pre_lnorm", "init", "init_std", "proj_init_std", "init_range", "precision",
               "seed", "learning_rate", "warmup_steps", "train_steps", "min_lr_ratio", "clip",
               "grad_accum_steps", "xla_fusion", "jit_compile")

# ---- benchmark flags ------------------------------------------------------------------------------
BENCH_FLAGS = ("n_token", "batch_size", "eval_tgt_len", "eval_mem_len", "steps", "bench_warmup",
               "rounds", "threads", "matmul_size")
flags.DEFINE_integer("n_token", 204, "Vocabulary size (training takes it from the corpus).")
flags.DEFINE_integer("batch_size", 8, "Batch size B (sequences per step).")
flags.DEFINE_integer("eval_tgt_len", None, "Evaluation segment length (default tgt_len).")
flags.DEFINE_integer("eval_mem_len", None, "Evaluation memory length (default mem_len).")
flags.DEFINE_integer("steps", 4, "Timed steps of each kind per round.")
flags.DEFINE_integer("bench_warmup", 3, "Untimed steps (compilation included) before timing.")
flags.DEFINE_integer("rounds", 5, "Measurement rounds; comparisons are interleaved per round.")
flags.DEFINE_integer("threads", 0, "Intra-op threads for TF (and torch); 0 = number of cores.")
flags.DEFINE_integer("matmul_size", 0,
                     "Side of the square matmuls that measure the peak; 0: grown until a "
                     "product lasts long enough (txl_tf/training/matmul_rate.py).")
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
flags.DEFINE_bool("compare_compilation", False,
                  "Also time the training step compiled the other way (XLA on if --jit_compile "
                  "chose off, and off if on), interleaved round by round.")
flags.DEFINE_bool("compare_vanilla", False, "Reproduce the paper's Table 9 on this machine.")
flags.DEFINE_list("vanilla_lens", ["128", "256", "512"], "Attention lengths L for Table 9.")
flags.DEFINE_integer("vanilla_batch_size", 1, "Streams evaluated in parallel for Table 9.")
flags.DEFINE_integer("vanilla_predictions", 8,
                     "Timed sliding-window predictions (forwards) of the vanilla model per L.")
flags.DEFINE_string("json_out", None, "Also write the JSON record to this file.")
flags.DEFINE_enum("child", None, ["memory"], "Internal: run as a measurement child process.")


# ------------------------------------------------------------------------------------------------
def setup_tensorflow():
    train_flags.set_up_devices(FLAGS)  # --xla_fusion, --logical_cpus as in train.py
    if FLAGS.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)


def model_config(**changes):
    """The `TransformerXLConfig` of the training flags (as train.py builds it) and --n_token."""
    return model_flags.config_from_flags(FLAGS, FLAGS.n_token).replace(**changes)


def build_model(config):
    keras.config.set_dtype_policy(FLAGS.precision)  # as the trainer does
    return txl_tf.TransformerXL(config)


def _profile():
    """`--profile_steps`: the benchmark's training steps (warm-up included, from 1) profiled
    into --model_dir/plugins/profile/, as train.py does; None without it."""
    if not FLAGS.profile_steps or FLAGS.child:
        return None
    total = FLAGS.bench_warmup + FLAGS.rounds * FLAGS.steps
    try:
        start, end = profile_range(FLAGS.profile_steps, total)
    except TrainError as error:
        raise app.UsageError(str(error).replace("--train_steps", "the benchmark's training "
                                                "steps (--bench_warmup + --rounds x --steps)"))
    return ProfileSteps(FLAGS.model_dir, start, end)


def _eval_lengths():
    q = FLAGS.eval_tgt_len or FLAGS.tgt_len
    m = FLAGS.mem_len if FLAGS.eval_mem_len is None else FLAGS.eval_mem_len
    return q, m


def _random_tokens(generator, batch_size, length, n_token):
    """{"inputs", "labels"} int32 [B, length]: a random segment and its next tokens."""
    tokens = generator.uniform([batch_size, length + 1], 0, n_token, tf.int32)
    return {"inputs": tokens[:, :-1], "labels": tokens[:, 1:]}


def strategy_and_compilation():
    """The strategy of train.py's `--strategy` and how `--jit_compile` compiles its step."""
    strategy = distribute.create_strategy(FLAGS.strategy, tpu=FLAGS.tpu, devices=FLAGS.devices)
    return strategy, step_compilation.choose(FLAGS.jit_compile, strategy, FLAGS.precision)


def _trainer(model, strategy, compilation):
    """The `Trainer` of train.py's flags: its optimizer, schedule, clip, accumulation and
    compilation."""
    warmup = min(FLAGS.warmup_steps, FLAGS.train_steps)
    schedule = WarmupCosineSchedule(FLAGS.learning_rate, warmup, FLAGS.train_steps,
                                    FLAGS.min_lr_ratio)
    with strategy.scope():
        optimizer = make_optimizer(schedule)
    return Trainer(model, optimizer, strategy, clip=FLAGS.clip,
                   grad_accum_steps=FLAGS.grad_accum_steps,
                   loss_scaling=FLAGS.precision == "mixed_float16",
                   jit_compile=compilation.mode is not None)


class Steps:
    """The training step of one model as training runs it (`Trainer.train`, one step per call)
    and an evaluation step (one replica; compiled whole by XLA when the training step is),
    memory carried across calls.

    Args:
      config: the model configuration.
      batch_size: streams B of every step (all replicas).
      seed: seed of the weights, dropout and the random tokens.
      strategy, compilation: `strategy_and_compilation()` (default: of the flags).
    """

    def __init__(self, config, batch_size, seed=0, strategy=None, compilation=None):
        if strategy is None:
            strategy, compilation = strategy_and_compilation()
        replicas = strategy.num_replicas_in_sync
        if batch_size % replicas:
            raise app.UsageError(f"--batch_size={batch_size} is not divisible by the "
                                 f"{replicas} replicas of --strategy={FLAGS.strategy}.")
        keras.utils.set_random_seed(seed)
        with strategy.scope():
            self.config, self.model = config, build_model(config)
        self.compilation, self.jit = compilation, compilation.mode is not None
        self.trainer = _trainer(self.model, strategy, compilation)
        self.eval_q, self.eval_m = _eval_lengths()
        generator = tf.random.Generator.from_seed(seed)
        batch = _random_tokens(generator, batch_size, config.tgt_len, config.n_token)
        dataset = tf.data.Dataset.from_tensors(batch).repeat()
        self.train_batches = iter(strategy.experimental_distribute_dataset(dataset))
        self.train_mems = self.trainer.init_memory(batch_size // replicas)
        self.eval_batch = _random_tokens(generator, batch_size, self.eval_q, config.n_token)
        self.eval_mems = self.model.init_mems(batch_size, self.eval_m)
        self._eval_step = self._compile_eval_step()
        self.train_count, self.profile = 0, _profile()

    def _compile_eval_step(self):
        model, mem_len = self.model, self.eval_m

        @tf.function(jit_compile=self.jit)
        def eval_step(batch, mems):
            nll_sum, count, new_mems = segment_nll(model, batch["inputs"], batch["labels"], mems,
                                                   mem_len=mem_len)
            return nll_sum / count, new_mems
        return eval_step

    def train(self):
        self.train_count += 1
        if self.profile and self.train_count == self.profile.start:
            self.profile.begin(self.profile.start - 1)
        self.train_mems, stats = self.trainer.train(self.train_batches, self.train_mems, 1)
        if self.profile and self.train_count == self.profile.end:
            self.profile.close()
            print(f"profile of training steps {self.profile.start}-{self.profile.end} in "
                  f"{FLAGS.model_dir}/plugins/profile/", flush=True)
        return float(stats.loss)

    def evaluate(self):
        loss, self.eval_mems = self._eval_step(self.eval_batch, self.eval_mems)
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
def _read_vm_hwm_mb():
    """This process image's peak resident memory (VmHWM). Unlike `ru_maxrss`, it starts afresh
    at exec: Linux carries the RSS of the forked copy of the parent into the child's
    `ru_maxrss`, so a parent of 1.6 GB made every child's figure at least 1.6 GB."""
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024.0


def _reset_vm_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _malloc_trim():
    """Return the C heap's free memory to the system (glibc); False where there is none."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def run_memory_child():
    """Child process: build, compile and run training steps; report peak RSS figures (MB):
    after importing TensorFlow and Keras, after building model, optimizer and data, the
    process peak (compilation and first steps included), and the peak of later steps once
    glibc has returned the compilation's freed heap (`malloc_trim`)."""
    after_import = _read_vm_hwm_mb()
    config = model_config()
    steps = Steps(config, FLAGS.batch_size, FLAGS.seed)
    after_build = _read_vm_hwm_mb()
    steps.time_steps("train", max(FLAGS.bench_warmup, 1))
    after_warmup = _read_vm_hwm_mb()
    trimmed = _malloc_trim()
    reset = _reset_vm_hwm()
    steps.time_steps("train", 3)
    steady = _read_vm_hwm_mb() if reset else None
    result = {"mem_len": config.mem_len, "rss_after_import_mb": after_import,
              "peak_rss_after_build_mb": after_build, "peak_rss_after_warmup_mb": after_warmup,
              "steady_step_peak_rss_mb": steady, "malloc_trim": trimmed,
              "process_peak_rss_mb": max(after_warmup, steady or 0.0)}
    print("CHILD_JSON " + json.dumps(result), flush=True)


def _flag_args(names):
    return [FLAGS[name].serialize() for name in names if FLAGS[name].value is not None]


def measure_memory_child(mem_len):
    """Run a memory child for mem_len (a fresh process: nothing of this one's memory counts)."""
    args = [sys.executable, os.path.abspath(__file__)] + _flag_args(MODEL_FLAGS + BENCH_FLAGS)
    args += [f"--mem_len={mem_len}", "--child=memory"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                          cwd=root, check=False)
    out = proc.stdout.decode()
    match = re.search(r"^CHILD_JSON (.*)$", out, re.M)
    if not match:
        raise RuntimeError(f"memory child for mem_len={mem_len} failed:\n{out[-2000:]}")
    return json.loads(match.group(1))


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
def compare_vanilla(lens, batch_size, predictions, rounds, jit):
    """Per-token evaluation time, vanilla sliding window vs Transformer-XL memory, per L."""
    q = FLAGS.eval_tgt_len or FLAGS.tgt_len
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


# ------------------------------------------------------------------------------------------------
def _versions():
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
    other.profile = None  # --profile_steps counts the steps of the main contender
    other.time_steps("train", FLAGS.bench_warmup)
    return other


def _best_rate(best, dtype, device, devices):
    """The better of `best` (a `MatmulRate` or None) and a new measurement; the accelerators'
    peak memory starts afresh after it (it counts the steps only)."""
    rate = measure_matmul_rate(dtype, device, size=FLAGS.matmul_size or None)
    reset_peaks(devices)
    return rate if best is None or rate.flops_per_second > best.flops_per_second else best


def _timed_rounds(steps, hf, precision_dtype, other=None):
    """({kind: step seconds}, float32 `MatmulRate`, `MatmulRate` in the precision's dtype),
    interleaved: each round times every contender once."""
    peak32, peak_p = None, None
    devices = strategy_devices(steps.trainer.strategy)
    times = {"train": [], "eval": [], "hf_train": [], "hf_eval": []}
    for _ in range(FLAGS.rounds):
        peak32 = _best_rate(peak32, tf.float32, devices[0], devices)
        if precision_dtype != tf.float32:
            peak_p = _best_rate(peak_p, precision_dtype, devices[0], devices)
        for kind in ("train", "eval"):
            times[kind] += steps.time_steps(kind, FLAGS.steps)
            if other and kind == "train":
                times.setdefault("other_train", []).extend(other.time_steps(kind, FLAGS.steps))
            if hf:
                times["hf_" + kind] += hf.time_steps(kind, FLAGS.steps)
    return times, peak32, peak_p if precision_dtype != tf.float32 else peak32


def _speed(tokens_per_step, train_times, eval_times, eval_tokens_per_step):
    """Seconds per step and tokens/s (median and best) of the timed steps."""
    train_s, eval_s = statistics.median(train_times), statistics.median(eval_times)
    return dict(train_step_s=train_s, train_tokens_per_s=tokens_per_step / train_s,
                train_step_s_all=train_times, eval_step_s=eval_s,
                eval_tokens_per_s=eval_tokens_per_step / eval_s, eval_step_s_all=eval_times,
                train_tokens_per_s_best=tokens_per_step / min(train_times),
                eval_tokens_per_s_best=eval_tokens_per_step / min(eval_times))


def _utilisation(config, record, peak):
    """Model FLOPs per token and the MFU of the median and best steps."""
    b, (eval_q, eval_m) = FLAGS.batch_size, _eval_lengths()
    train_fpt = model_flops.train_flops_per_token(config, b, config.tgt_len, config.mem_len)
    eval_fpt = model_flops.forward_flops_per_token(config, b, eval_q, eval_m)
    return dict(train_flops_per_token=train_fpt, eval_flops_per_token=eval_fpt,
                mfu_train=train_fpt * record["train_tokens_per_s"] / peak,
                mfu_eval=eval_fpt * record["eval_tokens_per_s"] / peak,
                mfu_train_best=train_fpt * record["train_tokens_per_s_best"] / peak,
                mfu_eval_best=eval_fpt * record["eval_tokens_per_s_best"] / peak)


def _huggingface_figures(record, hf, times, train_tokens, eval_tokens):
    record["huggingface"] = dict(hf.info, precision=FLAGS.hf_precision, peak_rss_mb=hf.close(),
                                 **_speed(train_tokens, times["hf_train"], times["hf_eval"],
                                          eval_tokens))
    for kind in ("train", "eval"):
        record[f"{kind}_speedup_vs_huggingface"] = (
            record[f"{kind}_tokens_per_s"] / record["huggingface"][f"{kind}_tokens_per_s"])


def _device_memory_figures(record, config, strategy):
    """The accelerators' peak over the last round's steps (None on a CPU, with the reason) and
    the accumulation chooser's estimate of the same step (`batch_fit.memory_estimate`)."""
    peak = peak_memory(strategy_devices(strategy))
    chunk = FLAGS.batch_size // strategy.num_replicas_in_sync // FLAGS.grad_accum_steps
    record["accelerator_peak_memory_mb"] = (None if peak["peak_bytes"] is None
                                            else peak["peak_bytes"] / 2**20)
    estimate = memory_estimate(config, chunk, None, "not queried")
    record["estimated_peak_memory_mb"] = estimate["estimated_peak_bytes"] / 2**20
    record["device_memory"] = dict(peak, estimate=estimate)


def _memory_figures(record, config):
    record["peak_rss_mb"] = None
    if not FLAGS.measure_memory:
        return
    mem_lens = [int(m) for m in FLAGS.memory_mem_lens] or [config.mem_len]
    record["memory"] = [measure_memory_child(m) for m in mem_lens]
    for m in record["memory"]:
        if m["mem_len"] == config.mem_len:
            record["peak_rss_mb"] = m["process_peak_rss_mb"]


def _settings(config, steps, threads, peak32, peak):
    eval_q, eval_m = _eval_lengths()
    return {
        "machine": _versions(), "config": config.to_dict(), "batch_size": FLAGS.batch_size,
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


def _write_json(record):
    line = json.dumps(record, sort_keys=True)
    print("BENCHMARK_JSON " + line, flush=True)
    if FLAGS.json_out:
        write_text_atomic(FLAGS.json_out, line + "\n")


def run_benchmark():
    """Times every contender, prints the table and the BENCHMARK_JSON line; returns the record."""
    threads = FLAGS.threads or os.cpu_count()
    config = model_config()
    b, (eval_q, _) = FLAGS.batch_size, _eval_lengths()
    steps = Steps(config, b, FLAGS.seed)
    hf = HuggingFaceClient(threads) if FLAGS.compare_huggingface else None
    _warm_up(steps, hf)
    other = _other_compilation(steps)
    precision_dtype = {"mixed_bfloat16": tf.bfloat16,  # mixed_float16: loss scaling as train.py
                       "mixed_float16": tf.float16}.get(FLAGS.precision, tf.float32)
    times, peak32, peak = _timed_rounds(steps, hf, precision_dtype, other)
    record = _settings(config, steps, threads, peak32, peak)
    record.update(_speed(b * config.tgt_len, times["train"], times["eval"], b * eval_q))
    for key in ("train_tokens_per_s", "train_tokens_per_s_best"):  # per device, as GPUs compare
        record[key + "_per_replica"] = record[key] / record["replicas"]
    record.update(_utilisation(config, record, peak.flops_per_second))
    if other:  # the same step compiled the other way, timed in the same rounds
        median = statistics.median(times["other_train"])
        record["other_compilation"] = {"jit_compile": other.jit, "train_step_s": median,
                                       "train_tokens_per_s": b * config.tgt_len / median,
                                       "train_step_s_all": times["other_train"]}
    if hf:
        _huggingface_figures(record, hf, times, b * config.tgt_len, b * eval_q)
    if FLAGS.compare_vanilla:
        record["vanilla_batch_size"] = FLAGS.vanilla_batch_size
        record["vanilla"] = compare_vanilla([int(x) for x in FLAGS.vanilla_lens],
                                            FLAGS.vanilla_batch_size, FLAGS.vanilla_predictions,
                                            FLAGS.rounds, steps.jit)
    _device_memory_figures(record, config, steps.trainer.strategy)
    _memory_figures(record, config)
    print_table(record)
    _write_json(record)
    return record


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    setup_tensorflow()
    if FLAGS.child == "memory":
        run_memory_child()
        return
    run_benchmark()


if __name__ == "__main__":
    cli.run(main)
