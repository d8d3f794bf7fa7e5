"""`--strategy=multi_worker_mirrored`: two `runners/train.py` processes on 127.0.0.1 train together.

One job of two workers (TF_CONFIG, one CPU replica each, records for 2 hosts x 1 replica,
dropout on) is compared with one process holding two replicas (MirroredStrategy on two logical
CPUs, records for 1 host x 2 replicas), on the same global batch of 4 streams. Worker 1 of the
job is killed with SIGKILL after the first checkpoint; the job is then stopped and started
again, as a scheduler does:

* the 2 x 1 and 1 x 2 layouts give global replica r the same streams (host h's replica 0 holds
  what replica h holds in the single-host file);
* the two workers' per-step losses (up to the kill, those of the undisturbed job), final
  validation loss, weights, Adam slots and memory equal those of one process with two replicas:
  with dropout on, replica w draws its own masks, in either setting (two replicas equal one
  replica within summation order: test_train_loop.py);
* the killed job resumes from its last checkpoint and continues the undisturbed losses step for
  step (weights, optimizer state, data position, memory and dropout RNG restored);
* each worker reads only its own host's files: worker w's data directory holds garbage (zeros of
  the right size) in place of the other host's records;
* only the chief writes into model_dir: when mount namespaces are available (root), worker 1
  of the restarted job (which restores from model_dir) runs with model_dir mounted read-only, so
  any write there would fail the run;
* a non-chief worker waits for the records the chief makes.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

import tf_records
from txl_tf.training.checkpoints import worker_memory
from runners.tools.launch_local_cluster import kill_workers, tf_configs
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainOptions

from tiny import (SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_SIZES, prepare_synthetic, train_config,
                  train_flags)

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(REPO, "runners", "train.py")
GLOBAL_BATCH, STEPS, SAVE_STEPS = 4, 12, 4
# Without XLA in the workers and in the process they are compared with: its compilation of the
# step was most of each run, and the strategy, not the compiler, is what is checked here (XLA's
# per-replica `gradients` mode under a CPU MirroredStrategy: tests/training/test_jit_compile.py).
RUN = dict(learning_rate=3e-3, warmup_steps=2, train_steps=STEPS, steps_per_loop=4, log_steps=1,
           save_steps=SAVE_STEPS, eval_steps=0, max_eval_batches=2, jit_compile="false")
# One layer: how the strategy splits, reduces and restores does not depend on the stacking
# (every layer's memory is checked all the same).
N_LAYER = 1
TIMEOUT = 240  # seconds per two-worker job (about 30 s on an idle 2-core machine)


def layout(hosts, replicas, split="train"):
    return tf_records.RecordLayout(tgt_len=TRAIN_SIZES["tgt_len"],
                                   per_replica_batch=GLOBAL_BATCH // (hosts * replicas),
                                   replicas_per_host=replicas, num_hosts=hosts)


DROPOUT = 0.1  # the dropout runs: replicas draw their own masks, which must survive a restart


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """One prepared corpus (layouts 2x1, 1x2) and, per worker, a copy in which the other
    host's 2x1 records are zeros of the same size (reading them would fail)."""
    root = tmp_path_factory.mktemp("multi_worker")
    full = str(root / "data")
    for hosts, replicas in ((2, 1), (1, 2)):
        for split in ("train", "valid"):
            prepare_synthetic(full, layouts={split: layout(hosts, replicas)})
    per_worker = []
    for w in range(2):
        copy = str(root / f"data-worker{w}")
        shutil.copytree(full, copy)
        for split in ("train", "valid"):
            other = os.path.join(copy, f"{layout(2, 1).basename(split)}.host-{1 - w:03d}.tfrecords")
            size = os.path.getsize(other)
            with open(other, "wb") as f:
                f.write(b"\0" * size)
        per_worker.append(copy)
    return dict(root=root, full=full, per_worker=per_worker)


def read_only_wrapper(directory):
    """A command prefix that runs a program with `directory` mounted read-only (a private mount
    namespace), or None when this machine does not allow it (not root, no unshare)."""
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    probe = subprocess.run(["unshare", "-m", "sh", "-c", script + "", directory, "sh", "-c",
                            f"touch '{directory}/probe' 2>/dev/null && echo writable || echo ro"],
                           capture_output=True, text=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0 or probe.stdout.strip() != "ro":
        return None
    return ["unshare", "-m", "sh", "-c", script, directory]


def worker_command(data, model_dir, worker, extra=(), dropout=0.0):
    flags = [f"--model_dir={model_dir}", f"--data_dir={data['per_worker'][worker]}",
             "--dataset=synthetic", f"--per_host_train_bsz={GLOBAL_BATCH // 2}",
             "--strategy=multi_worker_mirrored", f"--dropout={dropout}", f"--dropatt={dropout}"]
    flags += train_flags(n_layer=N_LAYER) + [f"--{k}={v}" for k, v in RUN.items()]
    flags += SYNTHETIC_FLAGS
    return [sys.executable, TRAIN] + flags + list(extra)


def start_job(data, model_dir, log_name, read_only_nonchief=False, dropout=0.0):
    """Start both workers; worker 1 optionally with model_dir read-only. Returns (processes,
    log paths)."""
    os.makedirs(model_dir, exist_ok=True)
    wrapper = read_only_wrapper(model_dir) if read_only_nonchief else None
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO, PYTHONUNBUFFERED="1")
    processes, logs = [], []
    try:
        for w, config in enumerate(tf_configs(2)):
            log = os.path.join(str(data["root"]), f"{log_name}-worker{w}.log")
            command = worker_command(data, model_dir, w, dropout=dropout)
            worker_env = dict(env, TF_CONFIG=config)
            if w == 1:
                # Its temporary files go to a directory of the test (checked afterwards).
                worker_env["TMPDIR"] = f"{model_dir}-tmp-{log_name}-worker1"
                os.makedirs(worker_env["TMPDIR"], exist_ok=True)
                if wrapper:
                    command = wrapper + command
            with open(log, "ab") as out:
                processes.append(subprocess.Popen(command, cwd=str(data["root"]),
                                                  env=worker_env, stdout=out,
                                                  stderr=subprocess.STDOUT))
            logs.append(log)
    except BaseException:
        kill_workers(processes)
        raise
    return processes, logs, wrapper is not None


def tail(path, n=3000):
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def wait_job(processes, logs, timeout=TIMEOUT):
    deadline = time.time() + timeout
    try:
        while any(p.poll() is None for p in processes):
            failed = [i for i, p in enumerate(processes) if p.poll() not in (None, 0)]
            if failed or time.time() > deadline:
                break
            time.sleep(0.2)
        codes = [p.poll() for p in processes]
    finally:
        kill_workers(processes)
    assert codes == [0, 0], "\n".join(f"worker {i} ({c}):\n{tail(log)}"
                                      for i, (c, log) in enumerate(zip(codes, logs)))


def losses(model_dir):
    acc = event_accumulator.EventAccumulator(os.path.join(model_dir, "train"),
                                             size_guidance={"tensors": 0})
    acc.Reload()
    return {e.step: float(tf.make_ndarray(e.tensor_proto)) for e in acc.Tensors("loss")}


def state(model_dir):
    """Model and optimizer variables of the newest checkpoint of model_dir."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
    names = sorted(n for n in reader.get_variable_to_shape_map()
                   if n.startswith(("model/", "optimizer/")))
    return {n: reader.get_tensor(n) for n in names}


def memory(model_dir, workers):
    """The memory of every worker after the last step, concatenated in global replica order."""
    parts = [worker_memory.read_memory(model_dir, w, STEPS) for w in range(workers)]
    assert all(p is not None for p in parts), parts
    return [np.concatenate(layer, axis=0) for layer in zip(*parts)]


def assert_same_state(a, b, atol, rtol=1e-5):
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=atol, rtol=rtol, err_msg=name)


def in_process_run(data, name, strategy, replicas, dropout=0.0, steps=STEPS):
    options = TrainOptions(model_dir=str(data["root"] / name), per_host_train_bsz=GLOBAL_BATCH,
                           **dict(RUN, train_steps=steps))
    prepared = tf_records.PreparedData(tf_records.DataOptions(
        data_dir=data["full"], dataset="synthetic", corpus_options=SYNTHETIC))
    summary = train(options, train_config(n_layer=N_LAYER, dropout=dropout, dropatt=dropout),
                    prepared, strategy=strategy)
    assert summary["replicas"] == replicas and summary["step"] == steps
    return options.model_dir


@pytest.fixture(scope="module")
def two_replicas(data):
    """The dropout-free run, for the check that dropout was on: its first SAVE_STEPS steps
    (one loop, one checkpoint) are enough for the losses to differ."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
    assert len(devices) == 2
    return in_process_run(data, "two_replicas", tf.distribute.MirroredStrategy(devices), 2,
                          steps=SAVE_STEPS)


@pytest.fixture(scope="module")
def two_replicas_dropout(data):
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
    return in_process_run(data, "two_replicas_dropout", tf.distribute.MirroredStrategy(devices),
                          2, dropout=DROPOUT)


def kill_worker_1_after_the_first_checkpoint(processes, state_file, seen, done):
    """SIGKILL worker 1 once `state_file` exists (the first checkpoint), then stop the job, as a
    scheduler does (worker 0 can then only fail or block in a collective: a checkpoint needs
    both workers). Gives up when a worker ended, after TIMEOUT or when `done` is set; `seen`
    gets whether both workers were still running. Polls every 10 ms (a thread, while this
    process makes a reference run)."""
    try:
        deadline = time.time() + TIMEOUT
        while (not os.path.exists(state_file) and all(p.poll() is None for p in processes)
               and time.time() < deadline and not done.is_set()):
            time.sleep(0.01)
        seen["running"] = all(p.poll() is None for p in processes)
        if seen["running"]:
            processes[1].send_signal(signal.SIGKILL)  # worker 1 dies in the middle of training
            processes[1].wait(timeout=30)
    finally:
        kill_workers(processes)


@pytest.fixture(scope="module")
def killed(request, data):
    """Two workers with dropout on; worker 1 killed with SIGKILL after the first checkpoint, the
    job then stopped, as a scheduler does. Returns the model_dir and what the kill left (worker
    1's return code, whether the job had finished, the newest checkpoint). While its workers
    run, this process makes the dropout-free reference (`two_replicas`: a model_dir and data of
    its own, nothing the job reads or writes)."""
    model_dir = str(data["root"] / "killed")
    processes, logs, _ = start_job(data, model_dir, "killed", dropout=DROPOUT)
    seen, done = {}, threading.Event()
    killer = threading.Thread(target=kill_worker_1_after_the_first_checkpoint, daemon=True,
                              args=(processes, os.path.join(model_dir, "checkpoint"), seen, done))
    killer.start()
    try:
        request.getfixturevalue("two_replicas")
        killer.join()
    finally:
        done.set()
        killer.join()
        kill_workers(processes)
    assert seen.get("running"), "\n".join(tail(log) for log in logs)
    return dict(model_dir=model_dir, returncode=processes[1].returncode,
                finished=os.path.exists(os.path.join(model_dir, "train_summary.json")),
                at=int(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1]))


@pytest.fixture(scope="module")
def killed_job(request, data, killed):
    """The killed job started again to the end (worker 1 with model_dir read-only where this
    machine allows it). Returns the model_dir, what the kill left (`killed`), and of the
    restarted job the logs, whether worker 1 ran read-only and its temporary directory.
    While its workers run, this process makes the reference with dropout
    (`two_replicas_dropout`: a model_dir and data of its own, nothing the job reads or
    writes)."""
    model_dir = killed["model_dir"]
    processes, logs, read_only = start_job(data, model_dir, "restarted", dropout=DROPOUT,
                                           read_only_nonchief=True)
    try:
        request.getfixturevalue("two_replicas_dropout")
    except BaseException:
        kill_workers(processes)
        raise
    wait_job(processes, logs)
    return dict(model_dir=model_dir, killed=killed, logs=logs, read_only=read_only,
                tmp_worker1=f"{model_dir}-tmp-restarted-worker1")


# --------------------------------------------------------------------------------------- tests
def read_records(path):
    out = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        out.append(list(example.features.feature["inputs"].int64_list.value))
    return np.array(out)


def test_two_host_layout_gives_global_replica_r_the_streams_of_replica_r(data):
    """The premise of the comparison: in both layouts global replica r = host * local + local
    replica sees the same streams at every step."""
    b = GLOBAL_BATCH // 2
    single = read_records(os.path.join(data["full"],
                                       f"{layout(1, 2).basename('train')}.host-000.tfrecords"))
    steps = single.shape[0] // GLOBAL_BATCH
    assert steps > STEPS
    for host in range(2):
        name = f"{layout(2, 1).basename('train')}.host-{host:03d}.tfrecords"
        own = read_records(os.path.join(data["full"], name))
        assert own.shape == (steps * b, TRAIN_SIZES["tgt_len"])
        for step in range(steps):
            np.testing.assert_array_equal(
                own[step * b:(step + 1) * b],
                single[step * GLOBAL_BATCH + host * b:step * GLOBAL_BATCH + (host + 1) * b])
    # Not trivially equal: the two replicas' streams differ.
    assert not np.array_equal(single[:b], single[b:2 * b])


def test_worker_1_is_killed_after_the_first_checkpoint(killed):
    """The premise of the restart: worker 1 died of SIGKILL between the first checkpoint and
    the end of the job. (The tests below are in the order that sets up one part of the job
    each: the kill and the restart, during each of which this process makes one of the
    references.)"""
    assert killed["returncode"] == -signal.SIGKILL
    assert not killed["finished"], "the job ended before the kill"
    assert SAVE_STEPS <= killed["at"] < STEPS


def test_only_the_chief_writes_into_model_dir(killed_job):
    chief_log, other_log = (tail(p, 100_000) for p in killed_job["logs"])
    assert "train_summary " in chief_log and "train_summary " not in other_log
    assert f"step {STEPS}/{STEPS}" in chief_log and f"step {STEPS}/{STEPS}" not in other_log
    model_dir = killed_job["model_dir"]
    # The chief wrote the memory of both workers (the non-chief has none of its own to write).
    steps = [sorted(worker_memory.memory_steps(model_dir, w)) for w in range(2)]
    assert steps[0] == steps[1] and steps[0][-1] == STEPS, steps
    assert set(steps[0]) <= set(range(SAVE_STEPS, STEPS + 1, SAVE_STEPS)), steps
    names = sorted(os.listdir(model_dir))
    assert not [n for n in names if n.startswith(".tmp")], names
    # Worker 1 saved its share of each checkpoint into a temporary directory and deleted it.
    leftovers = [os.path.join(root, f) for root, _, files in os.walk(killed_job["tmp_worker1"])
                 for f in files if "txl-nonchief-ckpt" in root]
    assert not leftovers, leftovers
    if not killed_job["read_only"]:
        pytest.skip("no private read-only mount here (needs root and unshare): worker 1 could "
                    "not be run with a read-only model_dir")
    # Worker 1 ran with model_dir read-only, restored from it and still finished: it wrote
    # nothing there.


def test_killed_worker_resumes_to_the_undisturbed_weights(killed_job, two_replicas_dropout):
    """Dropout on, so the dropout RNG state must be restored too. The undisturbed run is one
    process with two replicas (which the two workers equal up to the kill:
    test_two_workers_train_like_one_process_with_two_replicas)."""
    model_dir, killed_at = killed_job["model_dir"], killed_job["killed"]["at"]

    chief = tail(killed_job["logs"][0], 100_000)
    resumed_at = int(chief.split("resuming at step ")[1].split()[0])
    assert resumed_at == killed_at
    with open(os.path.join(model_dir, "train_summary.json")) as f:
        summary = json.load(f)
    assert summary["resumed"] and summary["step"] == STEPS

    undisturbed, resumed = state(two_replicas_dropout), state(model_dir)
    diff = max(float(np.abs(undisturbed[k] - resumed[k]).max()) for k in undisturbed)
    print(f"\nkilled worker 1 after checkpoint {killed_at}, job restarted: final weights + Adam "
          f"slots vs the undisturbed run, max abs difference {diff:.3g}")
    assert_same_state(resumed, undisturbed, atol=1e-6)
    for x, y in zip(memory(model_dir, 2), memory(two_replicas_dropout, 1)):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=1e-5)
    # The restarted job's losses continue the undisturbed sequence step for step (the data
    # position and memory were restored, not restarted).
    after = losses(model_dir)
    before = losses(two_replicas_dropout)
    assert [n for n in after if n > killed_at] == list(range(killed_at + 1, STEPS + 1))
    np.testing.assert_allclose([after[n] for n in range(killed_at + 1, STEPS + 1)],
                               [before[n] for n in range(killed_at + 1, STEPS + 1)], rtol=1e-6)


def test_two_workers_train_like_one_process_with_two_replicas(killed_job, two_replicas_dropout,
                                                              two_replicas):
    """Dropout on: each replica draws its own masks from the (mirrored) seed-generator state
    and its replica id, so worker w must draw what replica w of one process draws."""
    model_dir, killed_at = killed_job["model_dir"], killed_job["killed"]["at"]
    workers, replicas = losses(model_dir), losses(two_replicas_dropout)
    assert sorted(workers) == sorted(replicas) == list(range(1, STEPS + 1))
    print(f"\nloss after step n (global batch {GLOBAL_BATCH} x tgt_len {TRAIN_SIZES['tgt_len']}; "
          f"the job killed after step {killed_at}):")
    print(f"{'n':>3} {'2 replicas':>12} {'2 workers':>12}")
    for n in sorted(workers):
        print(f"{n:>3} {replicas[n]:12.7f} {workers[n]:12.7f}")
    # Before the kill (the undisturbed job), then to the end.
    for steps in (range(1, killed_at + 1), range(1, STEPS + 1)):
        np.testing.assert_allclose([workers[n] for n in steps], [replicas[n] for n in steps],
                                   rtol=1e-6)
    # Dropout was on: the losses differ from the dropout-free run's (its SAVE_STEPS steps).
    plain = losses(two_replicas)
    assert sorted(plain) == list(range(1, SAVE_STEPS + 1))
    assert max(abs(workers[n] - plain[n]) for n in range(2, SAVE_STEPS + 1)) > 1e-3

    # The final validation (each worker evaluates its own host's valid streams) agrees too.
    valid = {}
    for name, directory in (("workers", model_dir), ("replicas", two_replicas_dropout)):
        with open(os.path.join(directory, "train_summary.json")) as f:
            valid[name] = json.load(f)["valid_loss"]
    print(f"validation loss at step {STEPS}: 2 replicas {valid['replicas']:.7f}, "
          f"2 workers {valid['workers']:.7f}")
    assert valid["workers"] == pytest.approx(valid["replicas"], rel=1e-6)

    w, r = state(model_dir), state(two_replicas_dropout)
    print("final weights + Adam slots, max abs difference: 2 workers vs 2 replicas "
          f"{max(float(np.abs(w[k] - r[k]).max()) for k in w):.3g}")
    assert_same_state(w, r, atol=1e-6)
    for x, y in zip(memory(model_dir, 2), memory(two_replicas_dropout, 1)):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=1e-5)
    # The weights moved between checkpoints (so the equality is not trivial).
    first = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{SAVE_STEPS}"))
    moved = max(float(np.abs(first.get_tensor(k) - w[k]).max())
                for k in w if k.startswith("model/"))
    assert moved > 1e-2, moved


def test_non_chief_waits_for_the_records_the_chief_makes(tmp_path):
    """A fresh job: the chief prepares the records while the other workers wait for them (a
    non-chief that gave up at once made every first multi-worker launch fail)."""
    options = tf_records.DataOptions(data_dir=str(tmp_path / "data"), dataset="synthetic",
                                     corpus_options=SYNTHETIC)

    def ensure_records(options, layouts, **kwargs):
        return tf_records.PreparedData(options).ensure_records(layouts, **kwargs)
    layouts = {"train": layout(2, 1), "valid": layout(2, 1)}
    with pytest.raises(tf_records.DataError):
        ensure_records(options, layouts, may_prepare=False, wait_seconds=0)
    found = {}
    waiter = threading.Thread(target=lambda: found.update(
        ensure_records(options, layouts, may_prepare=False, wait_seconds=120)))
    waiter.start()
    time.sleep(1.5)
    assert waiter.is_alive() and not found  # still waiting: nothing written yet
    chief = ensure_records(options, layouts, may_prepare=True)
    waiter.join(timeout=120)
    assert not waiter.is_alive()
    assert sorted(found) == ["train", "valid"]
    assert found["train"]["files"] == chief["train"]["files"]
