"""One run per directory (txl_tf/storage/dir_lock.py), with two real processes on one directory.

The first run is held inside its work, after taking its locks, until the test lets it go: it
runs the runner through `HELD`, which makes the text corpus's build wait for a file the test
creates (a FIFO as --raw_path, which would do the same, is refused as not a regular file). So
the second run starts while the first is certainly inside its work, without a timed wait. The
runs that are refused, and those after the first ended, run in the test's process
(`runner_calls.call_runner`); the first holds its locks in a process of its own. Each refused
run must end with exit code 1 and the one line
`error: <dir> is in use by process <pid> (started <time>); ...`, no traceback, and write nothing;
the first run then finishes normally with everything it wrote intact.
"""
import os
import re
import signal
import subprocess
import sys
import threading

import pytest

from runner_calls import call_runner
from tiny import train_flags

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = "the cat sat on a mat dog ran to house big small red blue tree".split()
TEXT = "\n".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(9))
                 for i in range(5000)) + "\n"
IN_USE = re.compile(r"^error: (?P<dir>\S+) is in use by process (?P<pid>\d+) \(started "
                    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\); wait until it ends or choose "
                    r"another directory\.$")
# One layer, no periodic validation and a final one of one batch: the locks do not depend on
# what the run computes.
TRAIN = train_flags(n_layer=1) + ["--per_host_train_bsz=4", "--train_steps=2",
                                  "--warmup_steps=1", "--steps_per_loop=2", "--log_steps=2",
                                  "--save_steps=2", "--eval_steps=0", "--max_eval_batches=1",
                                  "--level=word", "--jit_compile=false"]


def command(name, *args):
    return [sys.executable, os.path.join(REPO, "runners", f"{name}.py"), *args]


def env():
    return dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")


def run(name, *args, cwd):
    """The runner in this process (its locks are released when it ends)."""
    return call_runner(name, args, cwd=cwd)


# Runs a runner (argv[1:]) with TextFiles.build waiting until the file $TXL_TEST_GO exists.
HELD = """
import os, runpy, sys, time
from tf_records.corpora.text import TextFiles
build = TextFiles.build
def held(self, *args, **kwargs):
    while not os.path.exists(os.environ["TXL_TEST_GO"]):
        time.sleep(0.05)
    return build(self, *args, **kwargs)
TextFiles.build = held
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def start(name, *args, cwd, go=None):
    """The runner in a new process; with `go`, held before the corpus is built until `go`
    exists (`HELD`)."""
    argv = command(name, *args)
    if go is not None:
        argv = [sys.executable, "-c", HELD, *argv[1:]]
    return subprocess.Popen(argv, cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(env(), TXL_TEST_GO=str(go)))


def wait_for_lock(path, process):
    """Blocks until `process` wrote its pid into the lock file `path` (it does so before any
    work) or ended; returns the pid read."""
    while process.poll() is None:
        if os.path.exists(path):
            with open(path) as f:
                words = f.read().split()
            if words and int(words[0]) == process.pid:
                return process.pid
        threading.Event().wait(0.05)
    raise AssertionError(f"the first run ended early: {process.communicate()[1][-3000:]}")


def let_go(go):
    """Lets a run started with `go` continue."""
    with open(go, "w") as f:
        f.write("go")


def check_refused(proc, directory, pid):
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    match = IN_USE.match(lines[0])
    assert match, lines[0]
    assert int(match.group("pid")) == pid
    assert os.path.samefile(os.path.join(os.path.dirname(directory), match.group("dir")), directory)


def tree(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, _, names in os.walk(directory) for name in names)


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text(TEXT)
    return str(path)


def test_second_prepare_data_on_one_data_dir_is_refused(tmp_path, book):
    args = ("--dataset=text", f"--raw_path={book}", "--level=word", "--data_dir=D",
            "--noprogress")
    go = tmp_path / "go"
    first = start("prepare_data", *args, cwd=tmp_path, go=go)
    try:
        pid = wait_for_lock(tmp_path / "D" / ".lock", first)
        second = run("prepare_data", *args, cwd=tmp_path)
        check_refused(second, tmp_path / "D", pid)
        assert tree(tmp_path / "D") == [".lock"]  # the second wrote nothing, removed nothing
        let_go(go)
        out, err = first.communicate(timeout=600)
    finally:
        first.kill()
    assert first.returncode == 0, err[-3000:]
    files = tree(tmp_path / "D")
    assert ".lock" not in files and "vocab.txt" in files and "corpus-info.json" in files
    assert not [f for f in files if f.endswith(".tmp")], files
    again = run("prepare_data", *args, cwd=tmp_path)  # complete: reused, not built again
    assert again.returncode == 0 and '"written": false' in again.stdout, again.stderr[-3000:]


def test_second_train_on_one_model_dir_is_refused(tmp_path, book):
    args = ("--dataset=text", f"--raw_path={book}", "--data_dir=D", "--model_dir=M", *TRAIN)
    go = tmp_path / "go"
    first = start("train", *args, cwd=tmp_path, go=go)
    try:
        pid = wait_for_lock(tmp_path / "M" / ".lock", first)
        second = run("train", *args, "--seed=7", cwd=tmp_path)
        check_refused(second, tmp_path / "M", pid)
        assert tree(tmp_path / "M") == [".lock"]
        # prepare_data.py needs the data_dir alone: refused while a training reads it.
        prepared = run("prepare_data", "--dataset=text", f"--raw_path={book}", "--level=word",
                       "--data_dir=D", cwd=tmp_path)
        check_refused(prepared, tmp_path / "D", pid)
        let_go(go)
        out, err = first.communicate(timeout=600)
    finally:
        first.kill()
    assert first.returncode == 0, err[-3000:]
    files = tree(tmp_path / "M")
    assert ".lock" not in files and "ckpt-2.index" in files, files
    assert "--seed=7" not in (tmp_path / "M" / "flags.txt").read_text()
    assert not os.path.exists(tmp_path / "D" / ".lock")


def test_lock_of_a_killed_run_is_taken_over_with_one_line(tmp_path):
    (tmp_path / "book.txt").write_text(TEXT)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from txl_tf.storage import dir_lock\n"
         "with dir_lock.locked('D'):\n    print('held', flush=True); time.sleep(600)"],
        cwd=str(tmp_path), stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout.readline() == "held\n"
        refused = run("prepare_data", "--dataset=text", "--raw_path=book.txt", "--level=word",
                      "--data_dir=D", cwd=tmp_path)
        check_refused(refused, tmp_path / "D", holder.pid)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    prepared = run("prepare_data", "--dataset=text", "--raw_path=book.txt", "--level=word",
                   "--data_dir=D", cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    notes = [line for line in prepared.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and f"held by process {holder.pid}" in notes[0], prepared.stdout
    assert "taking it over" in notes[0]
    assert "vocab.txt" in tree(tmp_path / "D") and ".lock" not in tree(tmp_path / "D")


@pytest.mark.parametrize("args,code", [
    (["--dataset=text", "--raw_path=empty.txt", "--level=word"], 2),
    # A failed download (connection refused at once) made raw/: removed with the rest.
    (["--dataset=enwik8", "--url=http://127.0.0.1:9/enwik8.zip"], 1)])
def test_refused_run_on_a_new_directory_leaves_no_directory(tmp_path, args, code):
    (tmp_path / "empty.txt").write_text("")
    refused = run("prepare_data", *args, "--data_dir=new/D", cwd=tmp_path)
    assert refused.returncode == code and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.count("error:") == 1
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]  # neither new/D nor new


# -- the lock file itself: never followed, never a rival of its own process -----------------

def locked_in_process(directory, exclusive=True):
    from txl_tf.storage import dir_lock
    with dir_lock.locked(str(directory), exclusive=exclusive):
        return sorted(os.listdir(directory))


def refused_in_process(directory, message):
    from txl_tf.storage import dir_lock
    with pytest.raises(dir_lock.LockFileError, match=message) as error:
        with dir_lock.locked(str(directory)):
            raise AssertionError("the lock was taken")
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("dangling", [False, True])
def test_a_lock_that_is_a_symbolic_link_is_refused_and_its_target_untouched(tmp_path, dangling):
    (tmp_path / "D").mkdir()
    victim = tmp_path / "victim.txt"
    if not dangling:
        victim.write_text("the user's text\n")
    os.symlink(victim, tmp_path / "D" / ".lock")
    line = refused_in_process(tmp_path / "D", "is a symbolic link, not a lock file of txl-tf")
    assert "remove it" in line
    assert os.path.islink(tmp_path / "D" / ".lock")  # not removed: the run did not make it
    if dangling:
        assert not os.path.lexists(victim)  # nothing created outside the directory
    else:
        assert victim.read_text() == "the user's text\n"


def test_a_hard_linked_lock_is_refused_and_the_other_name_untouched(tmp_path):
    (tmp_path / "D").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's text\n")
    os.link(victim, tmp_path / "D" / ".lock")
    refused_in_process(tmp_path / "D", "is a hard link to another file")
    assert victim.read_text() == "the user's text\n"


def test_a_lock_that_is_a_directory_or_a_fifo_is_refused(tmp_path):
    (tmp_path / "D" / ".lock").mkdir(parents=True)
    (tmp_path / "D" / ".lock" / "keep").write_text("x")
    refused_in_process(tmp_path / "D", "is a directory, not a lock file")
    assert (tmp_path / "D" / ".lock" / "keep").read_text() == "x"
    (tmp_path / "F").mkdir()
    os.mkfifo(tmp_path / "F" / ".lock")
    refused_in_process(tmp_path / "F", "is a FIFO, not a lock file")  # returns: no blocking
    assert os.path.exists(tmp_path / "F" / ".lock")


def test_an_immutable_lock_is_refused_not_ignored(tmp_path):
    (tmp_path / "D").mkdir()
    lock = tmp_path / "D" / ".lock"
    lock.write_text("")
    if os.geteuid() != 0:
        os.chmod(lock, 0o444)
    elif subprocess.run(["chattr", "+i", str(lock)], capture_output=True).returncode != 0:
        pytest.skip("neither a non-root user nor chattr +i (root writes a read-only file)")
    try:
        refused_in_process(tmp_path / "D", "exists but cannot be opened for writing")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(lock)], check=True)


def test_a_directory_locked_twice_by_one_process_names_no_rival(tmp_path):
    from txl_tf.storage import dir_lock
    with dir_lock.locked(str(tmp_path / "D")):
        for exclusive in (True, False):
            with pytest.raises(dir_lock.LockFileError, match="locked twice by this run") as error:
                with dir_lock.locked(str(tmp_path / "D"), exclusive=exclusive):
                    pass
            assert "in use by" not in str(error.value)
            assert f"process {os.getpid()}" in str(error.value)
    assert not os.path.exists(tmp_path / "D")  # made by the run, removed empty


def test_a_stale_record_of_this_pid_is_no_note(tmp_path, capsys):
    (tmp_path / "D").mkdir()
    (tmp_path / "D" / ".lock").write_text(f"{os.getpid()} 0\n")
    assert locked_in_process(tmp_path / "D") == [".lock"]
    assert "note:" not in capsys.readouterr().out
    assert os.listdir(tmp_path / "D") == []


def test_a_lock_replaced_by_a_link_while_held_is_not_removed(tmp_path):
    from txl_tf.storage import dir_lock
    (tmp_path / "D").mkdir()
    (tmp_path / "elsewhere").write_text("x")
    with dir_lock.locked(str(tmp_path / "D")):
        os.remove(tmp_path / "D" / ".lock")
        os.symlink(tmp_path / "elsewhere", tmp_path / "D" / ".lock")
    assert os.path.islink(tmp_path / "D" / ".lock")
    assert (tmp_path / "elsewhere").read_text() == "x"


def test_train_and_prepare_data_refuse_a_linked_lock_in_one_line(tmp_path):
    """The runners as users type them: exit code 2, one error line, the victim unchanged."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's text\n")
    (tmp_path / "book.txt").write_text(TEXT)
    for name, flag in (("train", "--model_dir=M"), ("prepare_data", "--data_dir=M")):
        (tmp_path / "M").mkdir(exist_ok=True)
        if not os.path.lexists(tmp_path / "M" / ".lock"):
            os.symlink(victim, tmp_path / "M" / ".lock")
        args = ["--dataset=text", "--raw_path=book.txt", "--level=word", flag]
        if name == "train":
            args += ["--data_dir=D", *TRAIN]
        proc = run(name, *args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "is a symbolic link" in errors[0], proc.stderr[-3000:]
        assert victim.read_text() == "the user's text\n"
        assert os.path.islink(tmp_path / "M" / ".lock")


def test_train_with_one_directory_for_model_and_data_names_no_rival(tmp_path):
    (tmp_path / "book.txt").write_text(TEXT)
    proc = run("train", "--dataset=text", "--raw_path=book.txt", "--model_dir=S",
               "--data_dir=S", *TRAIN, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "locked twice by this run" in errors[0], proc.stderr[-3000:]
    assert "in use by" not in proc.stderr
