"""One run per directory: a lock file that the kernel releases when its process ends.

A runner that writes into a directory holds `<dir>/.lock` for the whole run: `train.py` its
model_dir (exclusive) and its data_dir (shared: several trainings may read one prepared data
directory, and records they add are written atomically under names unique per process),
`prepare_data.py` its data_dir (exclusive), `import_weights.py` its output directory. A second
run that would conflict is refused at once:

    error: runs/x is in use by process 4711 (started 2026-11-24 20:55:03 UTC); wait until it
    ends or choose another directory.

The lock is `fcntl.flock`: the kernel drops it when the process dies, however it dies (kill -9
included), so a lock is never left held. An exclusive holder writes its pid and start time into
the file and deletes the file when it ends normally; a file still holding a pid when the lock
is taken is the trace of a killed run, reported in one `note:` line and taken over.

The lock file is opened without following a symbolic link (`O_NOFOLLOW`), and only a regular
file with one name is used: a `.lock` that is a link, a directory, a FIFO or another special
file, a hard link to another file, or one that exists but cannot be opened for writing
(immutable) is refused in one line (`LockFileError`) rather than followed, written or ignored,
so that the lock neither writes outside its directory nor is silently disabled. Its removal at
the end checks that the name still holds the file this run locked. A directory locked twice by
this one process (e.g. --model_dir and --data_dir the same) is named as such, not as a rival.

`directory_locked(path)` is the other lock of the package, for a few renames rather than a run:
a blocking exclusive flock of the directory itself (no lock file), which the versions of an
export directory are reserved and swapped under (`txl_tf/serving/versions.py`).

Paths with a scheme (gs://...) are not locked: flock works on local (and most network)
filesystems only. A directory where the lock file cannot be made (read-only, a parent is a
file) is not locked: the run reports the directory in its own words when it writes there.
"""
import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from typing import Optional, Tuple

from txl_tf.storage.model_dir_layout import LOCK_FILE


class DirectoryInUseError(RuntimeError):
    """Another process holds the directory's lock; exit code 1 (try again when it ends)."""
    exit_code = 1


class LockFileError(ValueError):
    """The directory's `.lock` is not a regular file this run may lock, or the directory is
    locked twice by this process; exit code 2 (the fix is the user's)."""
    exit_code = 2


# no link followed, not inherited by child processes, a FIFO's open does not block
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _start_time(pid: int) -> Optional[float]:
    """The start of process `pid` in seconds since the epoch (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith("btime"))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def _format_time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "at an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _holders_in_proc_locks(fd: int) -> list:
    """The pids holding a flock on the file of `fd` according to /proc/locks (Linux)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    holders = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[4].isdigit():
            inode = parts[5].rsplit(":", 1)[-1]
            if inode.isdigit() and int(inode) == st.st_ino:
                holders.append(int(parts[4]))
    return holders


def _recorded(fd: int) -> Tuple[Optional[int], Optional[float]]:
    """(pid, start time) written into the lock file by its last exclusive holder."""
    os.lseek(fd, 0, os.SEEK_SET)
    words = os.read(fd, 200).decode("ascii", "replace").split()
    try:
        return int(words[0]), float(words[1])
    except (IndexError, ValueError):
        return None, None


def _in_use(directory: str, fd: int):
    """The error of a lock held elsewhere: `DirectoryInUseError` naming the holder, or
    `LockFileError` when the only holder is this process itself."""
    pid, started = _recorded(fd)
    holders = _holders_in_proc_locks(fd)
    rivals = [h for h in holders if h != os.getpid()]
    if holders and not rivals:
        return LockFileError(
            f"{directory} is locked twice by this run (process {os.getpid()}): two of its "
            "directory flags name the same directory; give each its own directory.")
    if rivals and pid not in rivals:
        pid, started = rivals[0], _start_time(rivals[0])
    if pid == os.getpid():  # a stale record that happens to carry this pid
        pid = None
    who = f"process {pid}" if pid is not None else "another process"
    return DirectoryInUseError(
        f"{directory} is in use by {who} (started {_format_time(started)}); wait until it "
        "ends or choose another directory.")


def _refuse(path: str, what: str) -> LockFileError:
    return LockFileError(f"{path} is {what}, not a lock file of txl-tf; remove it (the run "
                         "makes its own) and run again.")


def _open(path: str) -> Optional[int]:
    """An fd of the regular file `path`, created when missing, never through a link; None when
    it cannot be created (e.g. a read-only directory)."""
    try:
        fd = os.open(path, _OPEN_FLAGS, 0o666)
    except OSError as error:
        if os.path.islink(path) or error.errno == errno.ELOOP:
            raise _refuse(path, "a symbolic link") from None
        if os.path.isdir(path):
            raise _refuse(path, "a directory") from None
        if os.path.lexists(path):  # exists but not writable: immutable, or another's
            raise LockFileError(f"{path} exists but cannot be opened for writing "
                                f"({error.strerror}); remove it or make it writable, then run "
                                "again.") from None
        return None  # nothing can be written there, by this run or another; the run
        # reports the directory in its own words if it must write
    st = os.fstat(fd)
    # nlink 0: removed by its last holder meanwhile; `_open_locked` then opens it again
    problem = (None if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1 else
               "a hard link to another file" if stat.S_ISREG(st.st_mode) else
               "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a special file")
    if problem:
        os.close(fd)
        raise _refuse(path, problem)
    return fd


def _open_locked(directory: str, exclusive: bool) -> Optional[int]:
    """An fd of `directory`/.lock holding the lock (None: the file cannot be made, e.g. a
    read-only directory)."""
    path = os.path.join(directory, LOCK_FILE)
    while True:
        fd = _open(path)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            error = _in_use(directory, fd)
            os.close(fd)
            raise error from None
        if _names(path, fd):  # not deleted by its last holder between open and flock
            return fd
        os.close(fd)


def _names(path: str, fd: int) -> bool:
    """Whether `path` (not followed if a link) is the file of `fd`."""
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except FileNotFoundError:
        return False


def _take_over(directory: str, fd: int) -> None:
    """Write this process's pid and start time; one line about a killed previous holder."""
    pid, started = _recorded(fd)
    if pid is not None and pid != os.getpid():
        print(f"note: {directory} was held by process {pid} (started {_format_time(started)}), "
              "which ended without releasing it (killed?); taking it over.", flush=True)
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()} {_start_time(os.getpid()) or time.time()}\n".encode())


def _missing_top(directory: str) -> Optional[str]:
    """The outermost of `directory` and its parents that does not exist yet, or None."""
    top, path = None, os.path.abspath(directory)
    while not os.path.exists(path):
        top, parent = path, os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return top


def _remove_made(directory: str, top: Optional[str]) -> None:
    """Remove `directory` (with its empty subdirectories, e.g. raw/ of a failed download) and
    its parents up to `top` (the ones this run made) while empty."""
    if top is None:
        return
    path = os.path.abspath(directory)
    for root, _, _ in sorted(os.walk(path), reverse=True):  # empty subdirectories first
        with contextlib.suppress(OSError):
            os.rmdir(root)
    while True:
        try:
            os.rmdir(path)  # only an empty directory
        except FileNotFoundError:  # removed just above
            pass
        except OSError:
            return
        if path == top:
            return
        path = os.path.dirname(path)


def _release(directory: str, fd: int, made: Optional[str]) -> None:
    """Delete the lock file when no one else holds it (and the directories this run made when
    it left nothing in them), then unlock."""
    path = os.path.join(directory, LOCK_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.suppress(OSError):
            if _names(path, fd):  # never a link or file put in its place meanwhile
                os.remove(path)
            _remove_made(directory, made)
    except BlockingIOError:  # another shared holder still reads the directory
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def directory_locked(directory: str):
    """An exclusive flock of `directory` itself, held for the block (waits for another holder).

    Raises:
      OSError: the directory cannot be opened (missing, not a directory, no permission).
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def is_chief_process() -> bool:
    """Whether this process writes the run's directories: not a non-chief worker of the
    `TF_CONFIG` cluster (task `chief`, or worker 0 of a cluster without one; no or an invalid
    TF_CONFIG: the only process). Non-chief workers share the chief's model_dir and take no
    lock."""
    try:
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        task, cluster = config.get("task") or {}, config.get("cluster") or {}
    except (ValueError, AttributeError):
        return True
    kind, index = task.get("type"), task.get("index", 0)
    if kind is None or kind == "chief":
        return True
    return kind == "worker" and index == 0 and "chief" not in cluster


@contextlib.contextmanager
def locked(directory: Optional[str], exclusive: bool = True):
    """Hold `directory`'s lock inside the block (the directory is created when missing, and
    removed again when the run leaves nothing in it, e.g. a refused run).

    Args:
      directory: the directory; None, '' or a path with a scheme (gs://...) is not locked.
      exclusive: one holder (a run that writes); False: any number of shared holders but no
        exclusive one (runs that read, or add files atomically under unique names).

    Raises:
      DirectoryInUseError: another process holds a conflicting lock.
      LockFileError: `.lock` is a link, a directory, a special or foreign file, or the
        directory is already locked by this process.
    """
    if not directory or "://" in directory:
        yield
        return
    directory = os.path.normpath(directory)
    made = _missing_top(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:  # a parent is a file, read-only, ...: the run's own checks say which
        yield
        return
    try:
        fd = _open_locked(directory, exclusive)
    except BaseException:
        _remove_made(directory, made)
        raise
    if fd is None:
        yield
        return
    try:
        if exclusive:
            _take_over(directory, fd)
        yield
    finally:
        _release(directory, fd, made)
