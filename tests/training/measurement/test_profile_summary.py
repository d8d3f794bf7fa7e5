"""`txl_tf/training/measurement/profile_summary.py`: self times per op and op type, on a
trace built here in TensorFlow's own XSpace protobuf (the format the profiler writes; the real
trace of a training run is read in test_profile_steps.py)."""
import pytest
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from txl_tf.training.measurement import profile_summary

MS = 10 ** 9  # picoseconds per millisecond


def trace(threads):
    """An XSpace with one host plane; threads: {line name: [(event name, start ms, ms)]}."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    ids = {}
    for number, (line_name, events) in enumerate(threads.items()):
        line = plane.lines.add(id=number, name=line_name, timestamp_ns=0)
        for name, start, duration in events:
            if name not in ids:
                ids[name] = len(ids) + 1
                plane.event_metadata[ids[name]].id = ids[name]
                plane.event_metadata[ids[name]].name = name
            line.events.add(metadata_id=ids[name], offset_ps=start * MS,
                            duration_ps=duration * MS)
    return space


def test_self_times_of_a_compiled_step():
    space = trace({
        "tf_Compute/1": [("ExecutorState::Process", 0, 11),
                         ("CpuExecutable::ExecuteAsyncOnStream", 0, 10)],  # waits
        "tf_numa_-1_Eigen/2": [("ThunkExecutor::Execute", 0, 10), ("dot.1", 0, 6),
                               ("add_fusion", 6, 2)],
        "tf_numa_-1_Eigen/3": [("ThunkExecutor::Execute", 0, 10), ("dot.2", 2, 2)],
    })
    totals, by_type = profile_summary.self_times(space)
    assert totals["dot.1"] == pytest.approx(6.0) and totals["add_fusion"] == pytest.approx(2.0)
    assert by_type["dot"] == pytest.approx(8.0)
    # Nested events: the thunk executor's own time is what its thunks leave.
    assert totals["ThunkExecutor::Execute"] == pytest.approx(2.0 + 8.0)
    # A wait is not work, and its parent's self time is what the wait leaves.
    assert "CpuExecutable::ExecuteAsyncOnStream" not in totals
    assert totals["ExecutorState::Process"] == pytest.approx(1.0)
