"""Downloads against file:// URLs and bad input: one clear error, nothing half-written left."""
import hashlib
import json
import os
import zipfile

import numpy as np
import pytest

import tf_records
from tf_records import download

from runner_calls import call_runner

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def no_temp_files(directory):
    leftovers = [f for root, _, files in os.walk(directory) for f in files
                 if f.endswith((".tmp", ".part"))]
    return not leftovers


def fake_enwik8(path, size=3000):
    data = bytes(np.random.default_rng(0).integers(32, 127, size, dtype=np.uint8)) + b"\n" * 10
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("enwik8", data)
    return path


def test_download_from_file_url_checks_and_renames(tmp_path, capsys):
    src = fake_enwik8(tmp_path / "src.zip")
    md5 = hashlib.md5(src.read_bytes()).hexdigest()
    dest = tmp_path / "out" / "enwik8.zip"
    download.fetch(src.as_uri(), dest, md5=md5, size=src.stat().st_size, progress=True)
    assert dest.read_bytes() == src.read_bytes()
    assert "download enwik8.zip" in capsys.readouterr().err  # the progress bar
    assert no_temp_files(tmp_path / "out")
    bad = tmp_path / "bad" / "enwik8.zip"
    with pytest.raises(tf_records.DownloadError, match="md5"):
        download.fetch(src.as_uri(), bad, md5="0" * 32, progress=False)
    assert not bad.exists() and no_temp_files(tmp_path / "bad")


def test_prepare_downloads_enwik8_through_url_option(tmp_path):
    src = fake_enwik8(tmp_path / "src.zip")
    summary = tf_records.prepare("enwik8", tmp_path / "d", url=src.as_uri(), eval_bytes=500,
                                 verify_checksum=False, progress=False)
    assert (tmp_path / "d" / "raw" / "enwik8.zip").read_bytes() == src.read_bytes()
    assert summary["num_tokens"]["test"] == 500 - 10  # the trailing newlines are dropped


def test_no_network_fails_at_once_naming_url_and_raw_path(tmp_path):
    url = "http://127.0.0.1:9/enwik8.zip"  # discard port: connection refused immediately
    with pytest.raises(tf_records.DownloadError) as e:
        tf_records.prepare("enwik8", tmp_path, url=url, progress=False)
    assert url in str(e.value) and "--raw_path" in str(e.value)
    assert not os.path.exists(tmp_path / "raw" / "enwik8.zip") and no_temp_files(tmp_path)


@pytest.mark.parametrize("kind", ["missing", "empty", "truncated", "not_a_zip"])
def test_bad_archives(tmp_path, kind):
    path = tmp_path / "enwik8.zip"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        fake_enwik8(path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif kind == "not_a_zip":
        path.write_bytes(b"<html>404 not found</html>")
    expected = {"missing": "does not exist", "empty": "empty", "truncated": "not a valid zip",
                "not_a_zip": "not a valid zip"}[kind]
    with pytest.raises(tf_records.CorpusError, match=expected):
        tf_records.prepare("enwik8", tmp_path / "d", raw_path=path, verify_checksum=False,
                           progress=False, eval_bytes=100)
    assert not os.path.exists(tmp_path / "d" / "corpus-info.json")
    assert not os.path.exists(tmp_path / "d" / "vocab.txt")


def test_undecodable_word_level_text(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("good line\n".encode() * 50 + "caf\xe9 au lait\n".encode("latin-1") + b"x\n" * 50)
    with pytest.raises(tf_records.CorpusError, match=r"not valid UTF-8.*--level=byte"):
        tf_records.prepare("text", tmp_path / "d", raw_path=path, level="word", progress=False)
    assert not os.path.exists(tmp_path / "d" / "corpus-info.json")
    # Byte level reads the same file fine.
    tf_records.prepare("text", tmp_path / "b", raw_path=path, level="byte", progress=False)


def test_unknown_words_in_evaluation_splits(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("".join(f"word{i}\n" for i in range(100)))
    with pytest.raises(tf_records.VocabularyError, match="valid split.*--unk_policy=unk"):
        tf_records.prepare("text", tmp_path / "d", raw_path=path, level="word",
                           unk_policy="error", progress=False)
    tf_records.prepare("text", tmp_path / "u", raw_path=path, level="word", unk_policy="unk",
                       progress=False)
    vocab = tf_records.load_vocab(tmp_path / "u")
    valid = np.fromfile(tmp_path / "u" / "valid.ids.bin", "<i4")
    assert set(vocab.decode(valid)) == {"<unk>", "<eos>"}


def test_corpus_too_short_for_one_batch(tmp_path):
    layout = tf_records.RecordLayout(tgt_len=64, per_replica_batch=8, replicas_per_host=2)
    with pytest.raises(tf_records.LayoutError, match=r"too short for one batch.*1040"):
        tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"test": layout}),
                           train_tokens=5000,
                           eval_tokens=1000, progress=False)
    assert not [f for f in os.listdir(tmp_path) if "tfrecords" in f or f.startswith("record_info")]
    assert no_temp_files(tmp_path)


def test_missing_and_mismatched_records_name_the_fix(tmp_path):
    layout = tf_records.RecordLayout(tgt_len=16, per_replica_batch=2)
    with pytest.raises(tf_records.RecordsNotFoundError, match="python runners/prepare_data.py"):
        tf_records.find_records(tmp_path, "train", layout)
    tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"train": layout}),
                       train_tokens=3000, eval_tokens=500, period=20, progress=False)
    other = tf_records.RecordLayout(tgt_len=32, per_replica_batch=2, replicas_per_host=2)
    with pytest.raises(tf_records.RecordsMismatchError) as e:
        tf_records.make_input_fn(tmp_path, "train", other)
    msg = str(e.value)
    assert "tgt_len: records have 16, the run asks for 32" in msg
    assert "replicas_per_host: records have 1, the run asks for 2" in msg
    command = msg.split("Rebuild for this run with:\n  ")[1]
    assert command.startswith("python runners/prepare_data.py --dataset=synthetic")
    assert "--tgt_len=32" in command and "--replicas_per_host=2" in command and "--period=20" in command
    with pytest.raises(tf_records.RecordsMismatchError, match="vocab_size: records have 64, the run asks for 99"):
        tf_records.make_input_fn(tmp_path, "train", layout, vocab_size=99)
    # The printed command really makes the records (its flags through prepare_data.py, run as
    # `__main__` in this process: `call_runner`).
    args = command.split()[2:]
    made = call_runner("prepare_data", [*args, "--noprogress"], cwd=REPO)
    assert made.returncode == 0, made.stderr[-3000:]
    tf_records.make_input_fn(tmp_path, "train", other)
    # Another dataset in the same data_dir is refused.
    with pytest.raises(tf_records.DataError, match="already holds synthetic"):
        tf_records.prepare("builtin", tmp_path, progress=False, max_bytes=10000)


def test_corrupted_and_truncated_record_files(tmp_path):
    layout = tf_records.RecordLayout(tgt_len=16, per_replica_batch=2)
    tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"train": layout}),
                       train_tokens=3000, eval_tokens=500, progress=False)
    meta = tf_records.find_records(tmp_path, "train", layout)
    path = meta["paths"][0][0]
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf_records.RecordsCorruptError, match="(?s)checksum.*prepare_data.py"):
        tf_records.make_input_fn(tmp_path, "train", layout)()
    # Without the checksum, TensorFlow's record CRC catches the flipped byte while reading.
    with pytest.raises(Exception, match="(?i)corrupt"):
        list(tf_records.make_input_fn(tmp_path, "train", layout, verify="none")())
    # Re-running prepare notices and rewrites the damaged records.
    summary = tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"train": layout}),
                                 train_tokens=3000, eval_tokens=500, progress=False)
    assert summary["records"]["train"]["written"]
    open(path, "wb").write(open(path, "rb").read()[:-100])
    with pytest.raises(tf_records.RecordsCorruptError, match="truncated"):
        tf_records.find_records(tmp_path, "train", layout)
    summary = tf_records.prepare("synthetic", tmp_path, tf_records.RecordPlan({"train": layout}),
                                 train_tokens=3000, eval_tokens=500, progress=False)
    assert summary["records"]["train"]["written"]
    assert len(list(tf_records.make_input_fn(tmp_path, "train", layout, repeat=False)())) == meta["num_steps"]


def test_runner_rejects_unknown_flags_and_writes_json_summary(tmp_path):
    """prepare_data.py's flags as a user types them, run as `__main__` in this process
    (`call_runner`: the same flag parsing, exit code and output; a runner's usage error as a
    process's exit status: tests/runners/test_bad_inputs.py)."""
    bad = call_runner("prepare_data", [f"--data_dir={tmp_path}", "--no_such_flag=1"], cwd=REPO)
    assert bad.returncode != 0 and "no_such_flag" in bad.stderr
    ok = call_runner("prepare_data", ["--dataset=synthetic", f"--data_dir={tmp_path}",
                                      "--train_tokens=4000", "--eval_tokens=800",
                                      "--splits=train,valid", "--tgt_len=16",
                                      "--per_replica_batch=4", "--noprogress"], cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["dataset"] == "synthetic" and set(summary["records"]) == {"train", "valid"}
    assert summary["records"]["train"]["num_steps"] == (4000 // 4 - 1) // 16


def test_text_corpus_from_another_file_is_not_mixed_with_the_cache(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("alpha beta\n" * 100)
    b.write_text("gamma delta\n" * 100)
    tf_records.prepare("text", tmp_path / "d", raw_path=a, level="word", progress=False)
    with pytest.raises(tf_records.DataError, match="already holds text"):
        tf_records.prepare("text", tmp_path / "d", raw_path=b, level="word", progress=False)


@pytest.mark.parametrize("name,expected", [
    ("wt2", "md5 .* != expected 542ccefacc6c27f945fb54453812b3cd"),
    ("wt103", "md5 .* != expected 9ddaacaf6af0710eda8c456decff7832"),
    ("lm1b", "got 300 bytes, expected 1792209805"),
])
def test_published_checksum_of_the_default_archive_is_checked(tmp_path, monkeypatch, name,
                                                              expected):
    """The archive at a corpus's default url is checked against its published checksum (served
    here from a local file: the default url is pointed at it); nothing is left behind."""
    cls = tf_records.CORPORA[name]
    fake = tmp_path / "fake"
    fake.write_bytes(os.urandom(300))
    monkeypatch.setitem(cls.OPTIONS, "url", fake.as_uri())
    data_dir = tmp_path / "d"
    with pytest.raises(tf_records.DownloadError, match=expected):
        cls().obtain_archive(str(data_dir), None, True, False)
    assert not (data_dir / "raw" / cls.archive_name).exists() and no_temp_files(data_dir)
    # The same bytes pass when they are what is published, and a mirror (--url) is not checked.
    monkeypatch.setattr(cls, "ARCHIVE_CHECKS", {"md5": hashlib.md5(fake.read_bytes()).hexdigest(),
                                                "size": 300})
    assert open(cls().obtain_archive(str(data_dir), None, True, False), "rb").read() == \
        fake.read_bytes()
    mirror = tmp_path / "mirror"
    monkeypatch.undo()
    got = cls(url=fake.as_uri()).obtain_archive(str(mirror), None, True, False)
    assert os.path.getsize(got) == 300
