"""`--profile_steps=START,END` (`txl_tf/training/actions/profile_steps.py`): training
writes a TensorBoard profile of exactly those steps to model_dir/plugins/profile/<run>/*.xplane.pb
(read back with TensorFlow's own XSpace protobuf, the format TensorBoard's profile plugin reads);
the controller cuts its compiled loops at START - 1 and END; bad values are one error line."""
import glob
import os

import pytest
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from runner_calls import call_runner
from tf_records import DataOptions, PreparedData
from tiny import SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_FLAGS, train_config
from txl_tf.commands.train import train as run_training
from txl_tf.commands.train_options import TrainError, TrainOptions
from txl_tf.training.controller import Controller
from txl_tf.commands.train_options import checked
from txl_tf.training.measurement import profile_summary
from txl_tf.training.actions.profile_steps import ProfileSteps


pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py


def train(tmp_path, data_dir, *extra):
    """runners/train.py with these flags, as `__main__` in this process (`call_runner`)."""
    args = [f"--model_dir={tmp_path / 'model'}", f"--data_dir={data_dir}",
            "--dataset=synthetic", "--per_host_train_bsz=4", "--warmup_steps=1",
            "--train_steps=4", "--steps_per_loop=4", "--log_steps=4", "--save_steps=4",
            "--eval_steps=0", "--max_eval_batches=1", *TRAIN_FLAGS, *SYNTHETIC_FLAGS, *extra]
    return call_runner("train", args, cwd=tmp_path)


def test_train_writes_a_profile_of_the_steps(tmp_path, synthetic_data_dir, capsys):
    """Through `train` (the library call of runners/train.py) with the runner's options."""
    options = TrainOptions(model_dir=str(tmp_path / "model"), per_host_train_bsz=4,
                           warmup_steps=1, train_steps=4, steps_per_loop=4, log_steps=4,
                           save_steps=4, eval_steps=0, max_eval_batches=1,
                           profile_steps=("2", "3"))
    data = PreparedData(DataOptions(data_dir=synthetic_data_dir, dataset="synthetic",
                                    corpus_options=SYNTHETIC))
    # One layer: XLA compiles the step (what the trace is checked for) in about half the time.
    assert run_training(options, train_config(n_layer=1), data)["step"] == 4
    out = capsys.readouterr().out
    assert "profile of steps 2-3" in out
    # No jit_compile given: auto, the whole step compiled on this CPU in float32.
    assert "jit_compile: on (the whole replica training step is compiled by XLA); " \
        "--jit_compile=auto: CPU float32" in out
    (path,) = glob.glob(str(tmp_path / "model" / "plugins" / "profile" / "*" / "*.xplane.pb"))
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    names = {plane.event_metadata[event.metadata_id].name
             for plane in space.planes for line in plane.lines for event in line.events}
    # The training loop ran while the profiler recorded: its tf.function and its ops.
    assert any("_train_loop" in name for name in names), sorted(names)[:50]
    assert any("MatMul" in name or "BatchMatMul" in name or "dot" in name for name in names)
    # The summary of benchmark_profile.py reads the same trace: XLA's thunks ran on the pool.
    totals, _ = profile_summary.self_times(profile_summary.read_newest_trace(
        str(tmp_path / "model")))
    assert any(name.startswith("dot") for name in totals), totals.most_common(20)


class FakeTrainer:
    def __init__(self):
        self.loops = []

    def train(self, iterator, mems, n):
        from txl_tf.training.trainer import LoopStats
        self.loops.append(n)
        return mems, LoopStats(steps=n, nll_sum=float(n), tokens=float(n))


def test_controller_cuts_the_loops_at_the_profiled_steps(monkeypatch):
    events = []
    monkeypatch.setattr("tensorflow.profiler.experimental.start",
                        lambda logdir: events.append(("start", trainer_step())))
    monkeypatch.setattr("tensorflow.profiler.experimental.stop",
                        lambda: events.append(("stop", trainer_step())))
    trainer = FakeTrainer()

    def trainer_step():
        return sum(trainer.loops)

    profile = ProfileSteps("unused", start=7, end=12)
    profile.begin(0)
    controller = Controller(trainer, None, 0, 0, steps_per_loop=10, actions=[profile])
    controller.run(20)
    assert trainer.loops == [6, 6, 8]  # ends at 6 (= START - 1) and 12 (END)
    assert events == [("start", 6), ("stop", 12)]
    events.clear()
    trainer.loops.clear()
    profile = ProfileSteps("unused", start=1, end=2)  # from the first step: started up front
    profile.begin(0)
    Controller(trainer, None, 0, 0, steps_per_loop=10, actions=[profile]).run(5)
    assert trainer.loops == [2, 3] and events == [("start", 0), ("stop", 2)]


@pytest.mark.parametrize("value", [("3", "2"), ("0", "2"), ("-1", "2"), ("2", "9"), ("2",),
                                   ("a", "b"), ("1", "2", "3")])
def test_bad_profile_steps_are_refused(value):
    # an entry outside the declared range is refused by the range check, the rest by the order's
    with pytest.raises(TrainError, match=r"--profile_steps(=.* is not START,END with 1 <= START "
                                         r"<= END <= --train_steps=8; give| must be an integer "
                                         r"in \[1, )"):
        checked(TrainOptions(train_steps=8, warmup_steps=1, profile_steps=value))
    assert checked(TrainOptions(train_steps=8, warmup_steps=1,
                                profile_steps=("2", "8"))).profile_steps == (2, 8)


def test_bad_profile_steps_on_the_command_line_is_one_error_line(tmp_path, synthetic_data_dir):
    result = train(tmp_path, synthetic_data_dir, "--profile_steps=3,9")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: --profile_steps=3,9 is not START,END"), lines[-5:]
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "model")
