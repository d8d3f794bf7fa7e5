r"""Profile the benchmark's training (or evaluation) step with the TensorFlow profiler.

Writes a TensorBoard profile (`--logdir`, open with TensorBoard's profile plugin) of `--steps`
steps after warm-up, and prints the ops (or XLA thunks / fusions) that take the most time,
read from the trace itself (`*.xplane.pb`), so it works without the plugin installed.

Takes the same model and benchmark flags as `runners/tools/benchmark.py`, e.g.
  python runners/tools/benchmark_profile.py --jit_compile=false --kind=train --top=25
"""
import collections
import glob
import os
import re

from runners import cli

cli.quiet_start()

import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from runners.tools import benchmark  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("logdir", "/tmp/txl_tf_profile", "Where the profile is written.")
flags.DEFINE_enum("kind", "train", ["train", "eval"], "Which step to profile.")
flags.DEFINE_integer("top", 30, "How many of the most expensive ops to print.")


_WAITING = {"_train_loop", "eval_step", "TFE_Py_ExecuteCancelable", "EagerExecute",
            "EagerKernelExecute", "BlockUntilReady"}


def summarize(logdir, top):
    """Total self time per event name on the CPU threads of the newest trace."""
    paths = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")),
                   key=os.path.getmtime)
    if not paths:
        raise RuntimeError(f"no profile written under {logdir}")
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as f:
        space.ParseFromString(f.read())
    totals = collections.Counter()  # self time (children on the same thread subtracted)
    by_type = collections.Counter()
    counts = collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            if "python" in line.name.lower():
                continue
            events = sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps))
            stack = []  # [end_ps, name, child_ps]
            def close(entry):
                end, name, child, duration = entry
                self_ms = max(duration - child, 0) / 1e9
                totals[name] += self_ms
                kind = name.rsplit(":", 1)[-1] if ":" in name else name  # TF op type
                by_type[re.sub(r"(_\d+)?(\.\d+)?$", "", kind)] += self_ms  # XLA: fusion kind
                counts[name] += 1
                if stack:
                    stack[-1][2] += duration
            for event in events:
                while stack and stack[-1][0] <= event.offset_ps:
                    close(stack.pop())
                name = plane.event_metadata[event.metadata_id].name
                if name.endswith("::Run") or name in _WAITING or name.startswith("EagerLocal"):
                    continue  # the calling thread waiting for the step, not work
                stack.append([event.offset_ps + event.duration_ps, name, 0, event.duration_ps])
            while stack:
                close(stack.pop())
    grand = sum(totals.values()) or 1.0
    print(f"profile: {paths[-1]}")
    print("self time by op type (TF) or instruction kind (XLA):")
    for name, ms in by_type.most_common(top):
        print(f"{ms:>10.1f} ms {100 * ms / grand:>6.1f}%  {name[:110]}")
    print("self time by op:")
    for name, ms in totals.most_common(top):
        print(f"{ms:>10.1f} ms {100 * ms / grand:>6.1f}% {counts[name]:>6d}x  {name[:110]}")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    benchmark.setup_tensorflow()
    steps = benchmark.Steps(benchmark.model_config(), FLAGS.batch_size, FLAGS.seed)
    steps.time_steps(FLAGS.kind, FLAGS.bench_warmup)
    tf.profiler.experimental.start(FLAGS.logdir)
    seconds = steps.time_steps(FLAGS.kind, FLAGS.steps)
    tf.profiler.experimental.stop()
    print(f"{FLAGS.kind} step seconds: {[round(s, 4) for s in seconds]}")
    summarize(FLAGS.logdir, FLAGS.top)


if __name__ == "__main__":
    cli.run(main)
