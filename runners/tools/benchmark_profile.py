r"""Profile the benchmark's training (or evaluation) step with the TensorFlow profiler.

Writes a TensorBoard profile (`--logdir`, open with TensorBoard's profile plugin) of `--steps`
steps after warm-up, and prints the ops (or XLA thunks / fusions) that take the most time,
read from the trace itself (`*.xplane.pb`, `txl_tf/training/measurement/profile_summary.py`), so it works
without the plugin installed.

Takes the same model and benchmark flags as `runners/tools/benchmark.py`, e.g.
  python runners/tools/benchmark_profile.py --jit_compile=false --kind=train --top=25
"""
from runners import cli

cli.quiet_start()

import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

from runners.cli import flag_ranges  # noqa: E402
from runners.tools.benchmarks.configuration import model_config, setup_tensorflow  # noqa: E402
from runners.tools.benchmarks.steps import Steps  # noqa: E402
from txl_tf.training.measurement import profile_summary  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("logdir", "/tmp/txl_tf_profile", "Where the profile is written.")
flags.DEFINE_enum("kind", "train", ["train", "eval"], "Which step to profile.")
flag_ranges.define_integer("top", 30, "How many of the most expensive ops to print.",
                           (1, 100_000, "ops"))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    setup_tensorflow()
    steps = Steps(model_config(), FLAGS.batch_size, FLAGS.seed)
    steps.time_steps(FLAGS.kind, FLAGS.bench_warmup)
    tf.profiler.experimental.start(FLAGS.logdir)
    seconds = steps.time_steps(FLAGS.kind, FLAGS.steps)
    tf.profiler.experimental.stop()
    print(f"{FLAGS.kind} step seconds: {[round(s, 4) for s in seconds]}")
    print(f"profile: {profile_summary.newest_trace_path(FLAGS.logdir)}")
    profile_summary.print_summary(profile_summary.read_newest_trace(FLAGS.logdir), FLAGS.top)


if __name__ == "__main__":
    cli.run(main)
