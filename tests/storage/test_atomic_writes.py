"""The atomic writes of a model directory (`txl_tf.storage.atomic_writes`) that training uses for
flags.txt, schedule.json, the checkpoint state file, best/ and each memory step: the old content or
the new one, never a part, nothing left behind, the umask respected."""
import os

import pytest

from txl_tf.storage.atomic_writes import (atomic_directory, swap_directory, write_json_atomic,
                                          write_text_atomic)


def test_text_and_json_replace_whole_files_with_the_umask(tmp_path):
    path = str(tmp_path / "sub" / "flags.txt")
    write_text_atomic(path, "--a=1\n")
    write_text_atomic(path, "--a=2\n")
    assert open(path).read() == "--a=2\n"
    write_json_atomic(str(tmp_path / "x.json"), {"b": 1, "a": [1]})
    assert open(tmp_path / "x.json").read() == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    assert sorted(os.listdir(tmp_path / "sub")) == ["flags.txt"]


def test_failed_text_write_keeps_the_old_file(tmp_path):
    path = str(tmp_path / "schedule.json")
    write_text_atomic(path, "old")
    with pytest.raises(TypeError):
        write_text_atomic(path, b"not text")  # fails inside the write
    assert open(path).read() == "old" and os.listdir(tmp_path) == ["schedule.json"]


def test_directory_is_swapped_in_whole_or_not_at_all(tmp_path):
    final = str(tmp_path / "best")
    with atomic_directory(final, ".best-tmp-1", ".best-old") as tmp:
        open(os.path.join(tmp, "a"), "w").write("1")
    assert os.listdir(final) == ["a"]
    with pytest.raises(RuntimeError):
        with atomic_directory(final, ".best-tmp-2", ".best-old") as tmp:
            open(os.path.join(tmp, "b"), "w").write("2")
            raise RuntimeError("disk full")
    assert os.listdir(final) == ["a"] and sorted(os.listdir(tmp_path)) == ["best"]
    with atomic_directory(final, ".best-tmp-3", ".best-old") as tmp:
        open(os.path.join(tmp, "c"), "w").write("3")
    assert os.listdir(final) == ["c"] and sorted(os.listdir(tmp_path)) == ["best"]
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(final).st_mode & 0o777 == 0o777 & ~mask


def test_swap_directory_puts_the_old_one_back_when_the_second_rename_fails(tmp_path):
    """The one directory swap (atomic_directory's and the export versions'): when the new
    directory cannot be renamed in, the previous one is back under its name, not left aside."""
    path, old = tmp_path / "1", tmp_path / ".1.old-7"
    path.mkdir()
    (path / "saved_model.pb").write_text("old")
    with pytest.raises(FileNotFoundError):
        swap_directory(str(tmp_path / ".1.tmp-7"), str(path), str(old))  # no tmp was written
    assert (path / "saved_model.pb").read_text() == "old" and not old.exists()

    new = tmp_path / ".1.tmp-8"
    new.mkdir()
    (new / "saved_model.pb").write_text("new")
    swap_directory(str(new), str(path), str(old))
    assert (path / "saved_model.pb").read_text() == "new"
    assert (old / "saved_model.pb").read_text() == "old"  # the caller deletes it
