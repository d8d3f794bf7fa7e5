"""Damaged, foreign and unwritable data directories: one clear error, nothing lost or half-written.

Every case runs `runners/train.py` (or `runners/prepare_data.py`) with the flags a user types (in
this process, `runner_calls.call_runner`; training without XLA, whose compilation is not what
is tested here) and checks the exit code, that stderr holds one `error:` line naming the damaged file (or directory) and the
fix, no traceback, and that nothing already written was changed. The read-only and disk-full
cases mount a small tmpfs (root only; skipped with the reason otherwise).
"""
import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import tf_records
from tf_records.records import metadata

from runner_calls import call_runner
from shared_dirs import read_only_dir, writable_copy
from tiny import SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_SIZES, train_flags

# What train.py asks for.
LAYOUT = tf_records.RecordLayout(tgt_len=TRAIN_SIZES["tgt_len"], per_replica_batch=4)
TRAIN_RECORDS = metadata.record_file(LAYOUT, "train", 0)
TRAIN_INFO = metadata.info_file(LAYOUT, "train")


def run_runner(name, *args, umask=None):
    """`runners/<name>` (e.g. "train.py") with `args`, under `umask` when given."""
    previous = os.umask(umask) if umask is not None else None
    try:
        return call_runner(name.removesuffix(".py"), args)
    finally:
        if previous is not None:
            os.umask(previous)


def train(data_dir, model_dir, *extra, umask=None):
    """train.py one step of a one-layer model (what it reads and writes does not depend on the
    stacking of layers)."""
    return run_runner(
        "train.py", f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--dataset=synthetic",
        "--per_host_train_bsz=4", "--train_steps=1", "--warmup_steps=0", "--steps_per_loop=1",
        "--log_steps=1", "--save_steps=1", "--eval_steps=0", "--max_eval_batches=1",
        "--jit_compile=false", *train_flags(n_layer=1), *SYNTHETIC_FLAGS, *extra, umask=umask)


def prepare(data_dir, *extra, umask=None):
    return run_runner(
        "prepare_data.py", "--dataset=synthetic", f"--data_dir={data_dir}", "--splits=train",
        f"--tgt_len={LAYOUT.tgt_len}", f"--per_replica_batch={LAYOUT.per_replica_batch}",
        "--noprogress",
        *[f"--{k}={v}" for k, v in SYNTHETIC.items()], *extra, umask=umask)


def one_error(result, *needles):
    """Checks a failed run: exit code, no traceback, one `error:` line holding every needle."""
    assert result.returncode in (1, 2), (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if re.match(r"([\w.]+: )?error: ", line)]
    assert len(lines) == 1, result.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def snapshot(directory):
    """{relative path: bytes} of every file under `directory`."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, directory)] = f.read()
    return files


def temp_files(directory):
    return [f for _, _, names in os.walk(directory) for f in names if f.endswith(".tmp")]


MODEL_FILES = ["config.json", "vocab.txt", "corpus-info.json", "train_summary.json", "flags.txt",
               "best/best.json"]


def modes_of(data_dir, model_dir):
    """{path: oct mode} of every file of `data_dir` and the `MODEL_FILES` of `model_dir`."""
    data_files = sorted(os.listdir(data_dir))
    assert "vocab.txt" in data_files and TRAIN_RECORDS in data_files and TRAIN_INFO in data_files
    return {str(p): oct(os.stat(p).st_mode & 0o777) for p in
            [data_dir / f for f in data_files] + [model_dir / f for f in MODEL_FILES]}


def train_under_022(path):
    """Prepares `path`/data and trains `path`/model one step by train.py under umask 022; the
    files' modes as written go to `path`/modes.json (the shared copy is then made read-only)."""
    root = pathlib.Path(path)
    result = train(root / "data", root / "model", umask=0o022)
    assert result.returncode == 0, result.stderr[-3000:]
    (root / "modes.json").write_text(json.dumps(modes_of(root / "data", root / "model")))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(data_dir, model_dir, {path: mode as written}): a data_dir prepared and a model_dir
    trained one step by train.py under umask 022, made once per run for both xdist workers
    and shared read-only (`shared_dirs`); tests that damage the data work on `data_copy`."""
    with read_only_dir(tmp_path_factory, "data_integrity_trained", train_under_022) as path:
        root = pathlib.Path(path)
        yield root / "data", root / "model", json.loads((root / "modes.json").read_text())


@pytest.fixture
def data_copy(trained, tmp_path):
    """A private, writable copy of the prepared data_dir (to damage)."""
    return pathlib.Path(writable_copy(trained[0], tmp_path / "data"))


@contextlib.contextmanager
def tmpfs(path, size):
    """A tmpfs of `size` mounted at `path` (skips the test when mounting is impossible)."""
    os.makedirs(path, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


# ------------------------------------------------------------------------------- umask
@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_respect_the_umask(trained, tmp_path, umask):
    if umask == 0o022:
        modes = trained[2]  # as train.py wrote them, before the shared copy was made read-only
    else:
        data_dir, model_dir = tmp_path / "data", tmp_path / "model"
        result = train(data_dir, model_dir, umask=umask)
        assert result.returncode == 0, result.stderr[-3000:]
        modes = modes_of(data_dir, model_dir)
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes


# ------------------------------------------------------------------------- damaged records
@pytest.mark.parametrize("split", ["train", "valid"])
def test_record_corrupted_in_place_is_named_before_training(trained, data_copy, tmp_path, split):
    path = data_copy / metadata.record_file(LAYOUT, split, 0)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55  # same size: only a checksum notices
    path.write_bytes(bytes(data))
    before = snapshot(data_copy)
    line = one_error(train(data_copy, tmp_path / "model"), str(path), "sha256",
                     "runners/prepare_data.py --dataset=synthetic")
    assert f"--data_dir={data_copy}" in line and "--tgt_len=16" in line
    assert snapshot(data_copy) == before  # the damaged file is reported, never replaced
    assert not os.path.exists(tmp_path / "model" / "checkpoint")  # not one step was trained
    # The library says the same before any dataset is built.
    with pytest.raises(tf_records.RecordsCorruptError, match="fails its sha256"):
        tf_records.make_input_fn(data_copy, split, LAYOUT)
    # The command the message gives really repairs the data_dir.
    command = line.split("Re-make it with: ")[1].split()
    fixed = run_runner("prepare_data.py", *command[2:], "--noprogress")
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert path.read_bytes() == (trained[0] / path.name).read_bytes()
    tf_records.make_input_fn(data_copy, split, LAYOUT)


def test_record_file_truncated(data_copy, tmp_path):
    path = data_copy / TRAIN_RECORDS
    path.write_bytes(path.read_bytes()[:-7])
    one_error(train(data_copy, tmp_path / "model"), str(path), "truncated",
              "runners/prepare_data.py")


@pytest.mark.parametrize("damage", ["missing_key", "not_json"])
def test_record_metadata_damaged(data_copy, tmp_path, damage):
    path = data_copy / TRAIN_INFO
    meta = json.loads(path.read_text())
    if damage == "missing_key":
        del meta["file_bytes"]
        path.write_text(json.dumps(meta))
        needle = "'file_bytes'"
    else:
        path.write_text(json.dumps(meta)[:200])
        needle = "not valid JSON"
    before = snapshot(data_copy)
    one_error(train(data_copy, tmp_path / "model"), str(path), needle, "delete it",
              "runners/prepare_data.py")
    assert snapshot(data_copy) == before
    with pytest.raises(tf_records.RecordsCorruptError, match=needle):
        tf_records.find_records(data_copy, "train", LAYOUT)


# ----------------------------------------------------------------------------- corpus info
@pytest.mark.parametrize("damage", ["not_json", "list", "missing_key"])
def test_invalid_corpus_info(data_copy, tmp_path, damage):
    path = data_copy / "corpus-info.json"
    text = {"not_json": '{"dataset": "synthetic", ', "list": "[1, 2]",
            "missing_key": json.dumps({"dataset": "synthetic"})}[damage]
    path.write_text(text)
    needle = {"not_json": "not valid JSON", "list": "not an object", "missing_key": "'level'"}
    one_error(train(data_copy, tmp_path / "model"), str(path), needle[damage])
    assert path.read_text() == text
    assert not os.path.exists(tmp_path / "model" / "config.json")


def test_corpus_info_without_vocab_checksum_is_still_usable(data_copy):
    path = data_copy / "corpus-info.json"
    info = json.loads(path.read_text())
    recorded = info.pop("vocab_checksum")
    path.write_text(json.dumps(info))
    with pytest.warns(UserWarning, match="no vocab_checksum"):
        computed = tf_records.read_corpus_info(data_copy)["vocab_checksum"]
    assert computed == recorded  # the checksum of the file is the one prepare recorded
    with pytest.warns(UserWarning):
        tf_records.find_records(data_copy, "train", LAYOUT, verify="checksum")


# ------------------------------------------------------------------------------ vocabulary
@pytest.mark.parametrize("damage", ["deleted", "edited"])
def test_vocab_changed_after_preparing_is_refused(trained, data_copy, tmp_path, damage):
    path = data_copy / "vocab.txt"
    if damage == "deleted":
        path.unlink()
        needle = "is missing"
    else:
        lines = path.read_text().splitlines()
        lines[1], lines[2] = lines[2], lines[1]  # same symbols, other ids
        path.write_text("\n".join(lines) + "\n")
        needle = "does not match"
    before = snapshot(data_copy)
    line = one_error(train(data_copy, tmp_path / "model"), str(path), needle,
                     "runners/prepare_data.py --dataset=synthetic")
    assert snapshot(data_copy) == before
    assert not os.path.exists(tmp_path / "model" / "vocab.txt")  # never copied into the model
    with pytest.raises(tf_records.VocabularyMismatchError, match=needle):
        tf_records.load_vocab(data_copy)
    if damage == "edited":  # prepare refuses too: an edited vocabulary is never overwritten
        one_error(prepare(data_copy), str(path), "does not match")
        assert snapshot(data_copy) == before
    else:  # the command given re-makes the vocabulary, identical to the original
        command = line.split("Re-make it with: ")[1].split()
        fixed = run_runner("prepare_data.py", *command[2:], "--noprogress")
        assert fixed.returncode == 0, fixed.stderr[-3000:]
        assert path.read_bytes() == (trained[0] / "vocab.txt").read_bytes()


def test_evaluate_refuses_an_edited_vocab(trained, data_copy):
    path = data_copy / "vocab.txt"
    path.write_text(path.read_text().replace("\n", "\nextra\n", 1))
    result = run_runner("evaluate.py", f"--model_dir={trained[1]}", f"--data_dir={data_copy}",
                        "--split=valid", "--batch_size=2", "--max_steps=1",
                        "--noprogress")
    one_error(result, str(path), "does not match")


# --------------------------------------------------------------------------- directories
def test_data_dir_is_a_file(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory\n")
    one_error(train(path, tmp_path / "model"), str(path), "is a file, not a directory")
    one_error(prepare(path), str(path), "is a file, not a directory")
    assert path.read_text() == "not a directory\n"


def test_read_only_data_dir(trained, tmp_path):
    with tmpfs(tmp_path / "ro", "2m") as mount:
        data_dir = shutil.copytree(trained[0], mount / "data")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        before = snapshot(data_dir)
        # tgt_len 8 needs new records, which cannot be written here.
        result = train(data_dir, tmp_path / "model", "--tgt_len=8", "--mem_len=8")
        one_error(result, str(data_dir), "is read-only", "--data_dir")
        assert snapshot(data_dir) == before
        # Records already there are read from the read-only directory without writing.
        assert train(data_dir, tmp_path / "model2").returncode == 0


def test_disk_full_while_preparing(tmp_path):
    with tmpfs(tmp_path / "full", "300k") as mount:
        data_dir = mount / "data"
        result = prepare(data_dir, "--train_tokens=60000")
        one_error(result, f"no space left on {data_dir}", "disk full")
        assert temp_files(mount) == []
        names = os.listdir(data_dir)
        assert TRAIN_RECORDS not in names and TRAIN_INFO not in names  # nothing looks complete
        # What is there is complete: the token caches match their descriptions.
        for split in ("train", "valid", "test"):
            tokens = tf_records.load_token_stream(data_dir, split)
            assert tokens.size == json.load(open(data_dir / f"{split}.ids.json"))["num_tokens"]
        assert tf_records.load_vocab(data_dir)


def test_disk_full_while_writing_the_token_cache(tmp_path):
    with tmpfs(tmp_path / "full", "100k") as mount:
        data_dir = mount / "data"
        result = prepare(data_dir, "--train_tokens=60000")
        one_error(result, f"no space left on {data_dir}", "train.ids.bin")
        assert temp_files(mount) == []
        assert not os.path.exists(data_dir / "train.ids.bin")
        assert not os.path.exists(data_dir / "corpus-info.json")  # the data_dir is not complete


def test_temp_file_of_a_killed_writer_is_removed(trained, tmp_path):
    """A killed prepare leaves `.<records>.<random>.tmp`; the next one removes it, or the disk
    it filled stays full."""
    with tmpfs(tmp_path / "small", "300k") as mount:
        data_dir = mount / "data"
        os.makedirs(data_dir)
        stale = data_dir / f".{TRAIN_RECORDS}.0badc0de.tmp"
        stale.write_bytes(b"\0" * 200_000)
        result = prepare(data_dir)
        assert result.returncode == 0, result.stderr[-3000:]
        assert temp_files(mount) == []
        assert (data_dir / TRAIN_RECORDS).read_bytes() == (trained[0] / TRAIN_RECORDS).read_bytes()
