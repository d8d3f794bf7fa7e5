"""Every atomic write of tf_records (`tf_records/atomic.py`) removes the temporary file a killed
writer of the same file left (a process killed, or a second Ctrl-C, mid-write), and leaves
alone those of writers still running."""
import os
import subprocess
import sys

import pytest

from tf_records import atomic


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


WRITERS = {"write_text": lambda p: atomic.write_text(p, "new\n"),
           "write_bytes": lambda p: atomic.write_bytes(p, b"new\n"),
           "write_json": lambda p: atomic.write_json(p, {"new": 1})}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("name", ["vocab.txt", "train.ids.bin", "corpus-info.json"])
def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path, writer, name):
    dead = tmp_path / f".{name}.{dead_pid()}-0badc0de.tmp"
    alive = tmp_path / f".{name}.{os.getppid()}-0badc0de.tmp"
    other = tmp_path / f".other-{name}.{dead_pid()}-0badc0de.tmp"
    for path in (dead, alive, other):
        path.write_bytes(b"\0" * 1000)
    WRITERS[writer](str(tmp_path / name))
    assert not dead.exists()
    assert alive.exists() and other.exists()  # a running writer's; another file's
    assert (tmp_path / name).exists()
