"""The benchmark's flags and what is built from them.

The flags of train.py are defined here, so that a training flagfile
(`--flagfile=runners/enwik8_base.flags`) or any training flag works in the benchmark unchanged;
their defaults are the benchmark configuration `BENCHMARK_DEFAULTS`. The benchmark's own flags
follow. Importing this module defines them all (once per process).
"""
import os

import keras
import tensorflow as tf
from absl import flags

import txl_tf
from runners.cli import model_flags, train_flags
from txl_tf.devices import step_compilation
from txl_tf.training import distribute

FLAGS = flags.FLAGS
TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # runners/tools
REPO_ROOT = os.path.dirname(os.path.dirname(TOOLS_DIR))
ENTRY_POINT = os.path.join(TOOLS_DIR, "benchmark.py")

# ---- the training flags: model flags, precision, seed, learning_rate, clip, ... -----------------
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
                     "product lasts long enough (txl_tf/training/measurement/matmul_rate.py).")
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
flags.DEFINE_enum("hf_device", "cpu", ["cpu", "cuda"],
                  "Where the Hugging Face model runs: cpu (same threads) or cuda (the GPU "
                  "txl-tf runs on; float32 with TF32 matmuls, as TensorFlow's float32 there).")
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


def setup_tensorflow():
    """Devices as train.py sets them up (`--xla_fusion`, `--logical_cpus`) and `--threads`."""
    train_flags.set_up_devices(FLAGS)
    if FLAGS.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)


def model_config(**changes):
    """The `TransformerXLConfig` of the training flags (as train.py builds it) and --n_token."""
    return model_flags.config_from_flags(FLAGS, FLAGS.n_token).replace(**changes)


def build_model(config):
    """A `TransformerXL` of `config` under the dtype policy of --precision (as the trainer
    builds it)."""
    keras.config.set_dtype_policy(FLAGS.precision)
    return txl_tf.TransformerXL(config)


def eval_lengths():
    """(segment length, memory length) of the evaluation step: --eval_tgt_len and
    --eval_mem_len, by default those of training."""
    q = FLAGS.eval_tgt_len or FLAGS.tgt_len
    m = FLAGS.mem_len if FLAGS.eval_mem_len is None else FLAGS.eval_mem_len
    return q, m


def strategy_and_compilation():
    """The strategy of train.py's `--strategy` and how `--jit_compile` compiles its step."""
    strategy = distribute.create_strategy(FLAGS.strategy, tpu=FLAGS.tpu, devices=FLAGS.devices)
    return strategy, step_compilation.choose(FLAGS.jit_compile, strategy, FLAGS.precision)
