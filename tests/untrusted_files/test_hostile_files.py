"""Every reader of every kind of directory against a set of hostile files.

`READERS` lists each reader of a data, model or preset directory with the files it reads;
`HOSTILE` makes each kind of bad file (a link out, a link to a named pipe, a named pipe, an
8 GB sparse file, JSON nested 100,000 deep, fields of the wrong types, bytes that are not
UTF-8, a directory). Each case copies a good directory, puts one hostile file in place of one
file, and calls the reader; it must give one clear line (an error of the reader's own class)
or, for a reader of an optional record, nothing, within seconds, without reading the file
outside (its content never shows) or writing anything outside the directories named.
`test_no_private_readers` keeps new readers on `untrusted_files.reading`, so that this set
covers them.
"""
import ast
import json
import os
import shutil
import signal
import time

import pytest

import tf_records
from causal_lm_support import model_dir as make_model_dir
from tf_records.corpus_info import read_corpus_info
from tf_records.prepared_data import PreparedData
from tf_records.records import store, stream_cache
from tf_records.records.layout import RecordLayout
from tf_records.vocab import model_vocab
from tiny import SYNTHETIC
from txl_tf.causal_lm import presets
from txl_tf.commands.evaluate import trained_data_dir, trained_level
from txl_tf.loss.loss_report import CorpusFacts
from txl_tf.storage import model_files
from txl_tf.training.run_record import resume_check

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYOUT = RecordLayout(8, 2)
SECRET = "SECRET-OUTSIDE-1234"
SECONDS = 20  # a case that takes longer blocks or reads without bound
ERRORS = (ValueError, model_files.ModelDirError)  # ModelDirError is a FileNotFoundError


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Good directories of each kind: data (prepared, valid records), model, preset."""
    root = tmp_path_factory.mktemp("pristine")
    tf_records.prepare("synthetic", str(root / "data"), tf_records.RecordPlan({"valid": LAYOUT}),
                       download=False, progress=False, **SYNTHETIC)
    make_model_dir(root / "model")
    presets.preset_from_model_dir(str(root / "model"), str(root / "preset"))
    return root


RECORD_INFO = f"record_info-{LAYOUT.basename('valid')}.json"
RECORD_FILE = f"{LAYOUT.basename('valid')}.host-000.tfrecords"


def data_reader(call):
    return lambda d, work: call(str(d))


# (name, directory kind, files it reads, call(d, work),
#  errors it may raise (None: an optional record: it returns instead))
READERS = [
    ("read_corpus_info", "data", ["corpus-info.json"], data_reader(read_corpus_info),
     ERRORS),
    ("load_vocab", "data", ["vocab.txt", "corpus-info.json"],
     data_reader(model_vocab.load_vocab), ERRORS),
    ("load_model_vocab(data)", "data", ["vocab.txt", "corpus-info.json"],
     data_reader(model_vocab.load_model_vocab), ERRORS),
    ("find_records", "data", [RECORD_INFO, RECORD_FILE, "corpus-info.json", "vocab.txt"],
     lambda d, work: store.find_records(str(d), "valid", LAYOUT, verify="checksum"),
     ERRORS),
    ("load_token_stream", "data", ["valid.ids.json", "valid.ids.bin"],
     lambda d, work: stream_cache.load(str(d), "valid"), ERRORS),
    ("PreparedData.copy_to", "data", ["vocab.txt", "corpus-info.json"],
     lambda d, work: PreparedData(str(d)).copy_to(str(work)), ERRORS),
    ("load_config", "model", ["config.json"],
     lambda d, work: model_files.load_config(str(d)), ERRORS),
    ("load_model_vocab(model)", "model", ["vocab.txt", "corpus-info.json"],
     lambda d, work: model_vocab.load_model_vocab(str(d), n_token=23), ERRORS),
    ("find_preprocessor(model)", "model", ["vocab.txt", "corpus-info.json"],
     lambda d, work: presets.find_preprocessor(str(d)), ERRORS),
    ("trained_data_dir", "model", ["corpus-info.json"],
     lambda d, work: trained_data_dir(str(d)), ERRORS),
    ("trained_level", "model", ["corpus-info.json"], lambda d, work: trained_level(str(d)),
     None),
    ("CorpusFacts.from_model_dir", "model", ["corpus-info.json"],
     lambda d, work: CorpusFacts.from_model_dir(str(d)), None),
    ("resume vocab checksum", "model", ["corpus-info.json"],
     lambda d, work: resume_check._vocab_checksum(str(d)), None),  # noqa: SLF001
    ("load_model", "model", ["ckpt-1.index"], lambda d, work: model_files.load_model(str(d)),
     ERRORS),
    ("latest_checkpoint", "model", ["checkpoint"],
     lambda d, work: model_files.latest_checkpoint(str(d)), None),
    ("load_preset", "preset", ["config.json", "model.weights.h5", "preprocessor.json",
                               "vocab.txt", "corpus-info.json"],
     lambda d, work: presets.load_preset(str(d)), ERRORS),
]


def write_fifo(path):
    os.mkfifo(path)


def link_fifo(path):
    os.mkfifo(str(path) + ".pipe")
    os.symlink(os.path.basename(str(path)) + ".pipe", path)


def huge_sparse(path):
    with open(path, "wb") as f:
        f.truncate(8 * 2**30)


def deep_json(path):
    depth = 100_000
    with open(path, "w") as f:
        f.write("[" * depth + "]" * depth)


def wrong_types(path, good: bytes):
    value = json.loads(good)
    with open(path, "w") as f:
        json.dump({k: {"not": ["this type"]} for k in value} if isinstance(value, dict)
                  else {"x": 1}, f)


def bad_utf8(path, good: bytes):
    with open(path, "wb") as f:
        f.write(good[:1] + b"\xff\xfe" + good[1:])


# name -> (make(path, outside, good bytes), applies to JSON files only)
HOSTILE = {
    "link_out": (lambda p, out, good: os.symlink(out, p), False),
    "link_to_fifo": (lambda p, out, good: link_fifo(p), False),
    "fifo": (lambda p, out, good: write_fifo(p), False),
    "huge_sparse": (lambda p, out, good: huge_sparse(p), False),
    "deep_json": (lambda p, out, good: deep_json(p), True),
    "wrong_types": (lambda p, out, good: wrong_types(p, good), True),
    "bad_utf8": (lambda p, out, good: bad_utf8(p, good), False),
    "directory": (lambda p, out, good: os.mkdir(p), False),
}
BINARY = (".h5", ".bin", ".tfrecords", ".index")
CASES = [(reader, file_, hostile) for reader in READERS for file_ in reader[2]
         for hostile, (_, json_only) in HOSTILE.items()
         if not (json_only and not file_.endswith(".json"))
         and not (hostile == "bad_utf8" and (file_.endswith(BINARY) or file_ == "checkpoint"))
         and not (reader[0] == "PreparedData.copy_to" and hostile == "bad_utf8")]  # bytes copied


def case_id(case):
    reader, file_, hostile = case
    return f"{reader[0]}-{file_}-{hostile}"


class Blocked(Exception):
    pass


def _alarm(signum, frame):
    raise Blocked(f"the reader ran past {SECONDS} s (blocked on a pipe, or reading 8 GB)")


def snapshot(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out[path] = os.path.getsize(path)
    return out


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_a_hostile_file_is_one_clear_line(case, pristine, tmp_path):
    (name, kind, _, call, errors), file_, hostile = case
    directory = tmp_path / kind
    shutil.copytree(pristine / kind, directory, symlinks=True)
    work = tmp_path / "work"
    work.mkdir()
    file_name = file_
    path = directory / file_name
    good = path.read_bytes()
    outside = tmp_path / "outside" / file_name
    outside.parent.mkdir()
    outside.write_bytes(good.replace(b"w1", SECRET.encode()) if file_name == "vocab.txt"
                        else good)  # the outside file is a good one: refused for being outside
    path.unlink()
    HOSTILE[hostile][0](path, outside, good)
    before = snapshot(tmp_path / "outside")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, SECONDS)
    start = time.monotonic()
    try:
        result = call(directory, work)
    except Blocked:
        raise
    except Exception as error:  # noqa: BLE001 - the class is checked below
        message = str(error)
        assert errors is not None and isinstance(error, errors), (
            f"{name} raised {type(error).__name__}: {message[:500]}")
        assert message and "\n" not in message.strip(), message
        assert "Traceback" not in message and SECRET not in message
        if hostile == "link_out":
            assert "outside" in message or "checksum" in message, message
    else:
        assert errors is None, f"{name} accepted a {hostile} {file_name}: {result!r}"[:500]
        assert SECRET not in repr(result)
        if name == "latest_checkpoint" and result is not None:
            assert os.path.realpath(result).startswith(os.path.realpath(directory))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < SECONDS
    assert snapshot(tmp_path / "outside") == before  # nothing written outside
    for top, _, files in os.walk(work):
        for written in files:
            with open(os.path.join(top, written), "rb") as f:
                assert SECRET.encode() not in f.read()


def test_the_cases_cover_every_reader_and_every_hostile_kind():
    assert {c[0][0] for c in CASES} == {r[0] for r in READERS}
    assert {c[2] for c in CASES} == set(HOSTILE)


# -- no private readers ------------------------------------------------------------------------
# Calls that read a file by path. Every module of the libraries reads files through
# untrusted_files.reading; the exceptions below read files this program wrote for itself in
# the same call, the machine's own (/proc, /sys), or a user's own large inputs streamed.
READING_CALLS = ("open", "load", "read_text", "read_bytes", "fromfile", "copyfile",
                 "copy", "copy2", "File")
ALLOWED = {
    "txl_tf/model/memory_estimate.py",          # /proc/meminfo, cgroup limits
    "txl_tf/training/measurement/profile_summary.py",  # the trace this run's profiler wrote
    "txl_tf/storage/dir_lock.py",               # /proc (lock holders) and the lock file it made
    "txl_tf/storage/weight_counts.py",          # h5 after check_weights_file
    "txl_tf/convert/hdf5_weights.py",           # h5 after open_checked
    "txl_tf/convert/safetensors_io.py",         # writes; reads through reading.read_bytes
    "txl_tf/commands/evaluate.py",              # --text_file streamed (checked regular)
    "txl_tf/storage/atomic_writes.py",          # writes
    "txl_tf/serving/versions.py",               # opens the export directory to lock it
    "tf_records/atomic.py",                     # writes
    "tf_records/text/graph.py",                 # writes
    "tf_records/download.py",                   # the download it writes
    "tf_records/corpora/base.py",               # raw corpus text, streamed
    "tf_records/corpora/lm1b.py",               # raw corpus text, streamed
    "tf_records/corpora/builtin.py",            # the package's own files
    "tf_records/corpora/ptb.py",                # the downloaded archive
    "tf_records/corpora/text.py",               # a user's --train_path text, checked regular
}


def library_modules():
    for package in ("txl_tf", "tf_records"):
        for top, dirs, files in os.walk(os.path.join(REPO, package)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(top, name), REPO).replace(os.sep, "/")


def reading_calls(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(
                func.value, ast.Name) else None
            if name == "load" and owner != "json":
                continue
            if name in ("copy", "copy2", "copyfile") and owner != "shutil":
                continue
            if name in ("read_text", "read_bytes") and owner in ("reading",):
                continue
            if name == "open" and owner not in (None, "io", "gfile"):
                continue
            if name == "File" and owner != "h5py":
                continue
            if name == "open" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and any(c in str(node.args[1].value) for c in "wxa"):
                continue  # a write
            if name == "fromfile" and node.args and isinstance(node.args[0], ast.Name) \
                    and node.args[0].id in ("f", "handle"):
                continue  # a descriptor opened by reading.open_checked
            if name in READING_CALLS:
                yield node.lineno, name


def test_no_private_readers():
    found = [f"{path}:{line} {name}(" for path in library_modules() if path not in ALLOWED
             for line, name in reading_calls(path)]
    assert not found, ("read files from elsewhere with untrusted_files.reading (the hostile "
                       "files of this module then cover them):\n" + "\n".join(found))
