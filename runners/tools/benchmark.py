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
    timed in the same run by `txl_tf/training/measurement/matmul_rate.py`, the rate training's duration
    estimate uses), and the model FLOPs utilisation (MFU) of the training and evaluation
    steps: model FLOPs per token x tokens/s / measured matmul peak;
  * peak resident memory of a training run, in a child process per configuration
    (`--memory_mem_lens`: one child per memory length, to show the growth in mem_len), and on
    an accelerator its allocator's peak over the timed steps
    (`txl_tf/training/measurement/device_memory.py`), next to the estimate with which training chooses its
    gradient accumulation (`txl_tf/training/batch_fit.py`).
Optional comparisons:
  * `--compare_huggingface`: the Hugging Face `transformers` TransfoXL (PyTorch, CPU, same
    threads) on the same configuration, driven by `runners/tools/benchmark_huggingface.py` in its
    own environment (`--hf_python`) and timed interleaved with txl-tf, round by round;
  * `--compare_vanilla`: the paper's Table 9 on this machine: per-token evaluation time of the
    vanilla Transformer (the `vaswani` variant of txl_tf/model/attention_variants.py, a window of L
    tokens shifted by one per prediction, as Al-Rfou et al. evaluate) against Transformer-XL
    (`ours`) with a cached memory of length L.

Prints a readable table and one line `BENCHMARK_JSON {...}` with every figure.

Example (the default configuration, spelled out):
  python runners/tools/benchmark.py --n_token=204 --n_layer=6 --d_model=256 --n_head=8 --d_head=32 \
      --d_inner=1024 --tgt_len=128 --mem_len=128 --batch_size=8 --dropout=0.1 \
      --compare_huggingface --compare_vanilla
A training flagfile works as well: --flagfile=runners/enwik8_base.flags --batch_size=2.
The measurements live in runners/tools/benchmarks/, one per module.
"""
from runners import cli

cli.quiet_start()

from absl import app  # noqa: E402

from runners.tools.benchmarks.configuration import FLAGS, setup_tensorflow  # noqa: E402
from runners.tools.benchmarks.peak_memory import run_memory_child  # noqa: E402
from runners.tools.benchmarks.run import run_benchmark  # noqa: E402


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
