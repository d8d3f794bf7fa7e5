"""Where a profile's time goes, read from the trace itself (`*.xplane.pb`), without TensorBoard.

Self time per op type and per op on the host CPU threads of one profile (`ProfileSteps`,
`--profile_steps`, or `runners/tools/benchmark_profile.py`), children on the same thread
subtracted. TF ops are named `name:Type`, XLA thunks by their fusion or instruction name. The
thread that calls an XLA executable waits in `CpuExecutable::ExecuteAsyncOnStream` while the
intra-op pool runs its thunks: that wait (the step's wall time) is left out, like the other
waits in `WAITING`. The work a matrix product hands to other pool threads is not traced, so a
thunk's time is its wall time on the thread that ran it.

Example:
  >>> space = read_newest_trace("runs/x")
  >>> print_summary(space, top=20)
"""
import collections
import glob
import os
import re
from typing import Tuple

from tensorflow.tsl.profiler.protobuf import xplane_pb2

# Events of a thread that waits for work done elsewhere (the step, an XLA executable).
WAITING = frozenset({"_train_loop", "eval_step", "TFE_Py_ExecuteCancelable", "EagerExecute",
                     "EagerKernelExecute", "BlockUntilReady",
                     "CpuExecutable::ExecuteAsyncOnStream"})


def newest_trace_path(logdir: str) -> str:
    """The newest `plugins/profile/<run>/*.xplane.pb` under logdir."""
    paths = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")),
                   key=os.path.getmtime)
    if not paths:
        raise FileNotFoundError(f"no profile written under {logdir}")
    return paths[-1]


def read_newest_trace(logdir: str) -> xplane_pb2.XSpace:
    """The newest `plugins/profile/<run>/*.xplane.pb` under logdir, parsed."""
    space = xplane_pb2.XSpace()
    with open(newest_trace_path(logdir), "rb") as f:
        space.ParseFromString(f.read())
    return space


def _host_lines(space):
    for plane in space.planes:
        if plane.name.startswith("/host:CPU"):
            for line in plane.lines:
                if "python" not in line.name.lower():
                    yield plane, line


def self_times(space: xplane_pb2.XSpace) -> Tuple[collections.Counter, collections.Counter]:
    """(milliseconds of self time per event name, per op type or XLA instruction kind)."""
    totals, by_type = collections.Counter(), collections.Counter()
    for plane, line in _host_lines(space):
        stack = []  # [end_ps, name, child_ps, duration_ps, is_work]

        def close(entry):
            _, name, child, duration, is_work = entry
            if is_work:
                self_ms = max(duration - child, 0) / 1e9
                totals[name] += self_ms
                kind = name.rsplit(":", 1)[-1] if ":" in name else name  # TF op type
                by_type[re.sub(r"(_\d+)?(\.\d+)?$", "", kind)] += self_ms  # XLA: fusion
            if stack:
                stack[-1][2] += duration

        for event in sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps)):
            while stack and stack[-1][0] <= event.offset_ps:
                close(stack.pop())
            name = plane.event_metadata[event.metadata_id].name
            is_work = not (name.endswith("::Run") or name in WAITING
                           or name.startswith("EagerLocal"))
            stack.append([event.offset_ps + event.duration_ps, name, 0, event.duration_ps,
                          is_work])
        while stack:
            close(stack.pop())
    return totals, by_type


def print_summary(space: xplane_pb2.XSpace, top: int = 30) -> None:
    """Print the self times of the `top` most expensive op types and ops."""
    totals, by_type = self_times(space)
    grand = sum(totals.values()) or 1.0
    print("self time by op type (TF) or instruction kind (XLA):")
    for name, ms in by_type.most_common(top):
        print(f"{ms:>10.1f} ms {100 * ms / grand:>6.1f}%  {name[:110]}")
    print("self time by op:")
    for name, ms in totals.most_common(top):
        print(f"{ms:>10.1f} ms {100 * ms / grand:>6.1f}%  {name[:110]}")
