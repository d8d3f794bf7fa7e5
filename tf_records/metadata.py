"""Record metadata (`record_info-<basename>.json`), naming, and finding records for a run.

For split `train` and a layout with per-host batch 32, tgt_len 512, 8 replicas per host, 2 hosts
and 1 pass, the files in `data_dir` are:

```
train.bsz-32.tlen-512.core-8.hosts-2.passes-1.host-000.tfrecords   # host 0's streams
train.bsz-32.tlen-512.core-8.hosts-2.passes-1.host-001.tfrecords   # host 1's streams
record_info-train.bsz-32.tlen-512.core-8.hosts-2.passes-1.json     # metadata (this module)
```

The metadata JSON holds: `format`, `dataset`, `split`, `level`, `vocab_size`,
`vocab_checksum`, `cutoffs`, the layout (`tgt_len`, `per_replica_batch`,
`replicas_per_host`, `num_hosts`, `num_passes`, `last_segment`, derived
`per_host_batch`, `num_streams`), `pass_offsets`, `num_steps`, `stream_length` (tokens per
stream row), token counts (`num_tokens` of the split, `num_labels` scored positions,
`tokens_dropped`), `stream_sha256` (of the split's token ids), `files` (one list per host),
`file_bytes` and `file_sha256` (per file), `records_per_host`.
"""
import glob
import hashlib
import os
import shlex
import warnings

from tf_records import atomic, vocabulary
from tf_records.errors import (DataDirError, RecordsCorruptError, RecordsMismatchError,
                               RecordsNotFoundError, VocabularyMismatchError)
from tf_records.layout import RecordLayout

FORMAT = "txl-tf-records-v1"
CORPUS_INFO = "corpus-info.json"
VOCAB_FILE = "vocab.txt"

_LAYOUT_KEYS = ("tgt_len", "per_replica_batch", "replicas_per_host", "num_hosts", "num_passes",
                "last_segment")
# Keys a reader needs: a file without one of them is damaged (RecordsCorruptError), never a KeyError.
META_KEYS = _LAYOUT_KEYS + ("vocab_size", "vocab_checksum", "files", "file_bytes", "file_sha256",
                            "num_steps")
CORPUS_INFO_KEYS = ("dataset", "level", "vocab_size")


def record_file(layout: RecordLayout, split: str, host: int) -> str:
    """File name (relative to data_dir) of `host`'s records."""
    return f"{layout.basename(split)}.host-{host:03d}.tfrecords"


def info_file(layout: RecordLayout, split: str) -> str:
    """Metadata file name (relative to data_dir)."""
    return f"record_info-{layout.basename(split)}.json"


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def read_corpus_info(data_dir):
    """The `corpus-info.json` of `data_dir` or None.

    A file written before `vocab_checksum` was recorded gets it computed from `vocab.txt`
    (with a warning: the vocabulary can then not be checked against what was prepared).

    Raises:
      RecordsCorruptError: the file is not JSON or lacks one of `CORPUS_INFO_KEYS`.
    """
    path = os.path.join(data_dir, CORPUS_INFO)
    if not os.path.exists(path):
        return None
    info = atomic.read_json(path, required=CORPUS_INFO_KEYS, fix=(
        f"restore it, or delete {data_dir} and prepare it again with runners/prepare_data.py"))
    vocab_path = os.path.join(data_dir, VOCAB_FILE)
    if "vocab_checksum" not in info and os.path.exists(vocab_path):
        info["vocab_checksum"] = vocabulary.file_checksum(vocab_path, info["level"])
        warnings.warn(f"{path} records no vocab_checksum (prepared by an older version): "
                      f"{vocab_path} is taken as it is ({info['vocab_checksum']}).")
    return info


def check_vocab_file(data_dir, info):
    """Checks that `data_dir/vocab.txt` is the vocabulary `corpus-info.json` describes.

    Args:
      data_dir: a prepared data directory.
      info: its corpus-info dict (`read_corpus_info`).

    Raises:
      VocabularyMismatchError: `vocab.txt` is missing, or was edited or replaced after preparing
        (its checksum differs from the recorded `vocab_checksum`).
    """
    path = os.path.join(data_dir, VOCAB_FILE)
    command = base_command(data_dir, info)
    if not os.path.exists(path):
        raise VocabularyMismatchError(
            f"{path} is missing: {data_dir} cannot be used without the vocabulary it was prepared "
            f"with. Re-make it with: {command}")
    got = vocabulary.file_checksum(path, info["level"])
    if got != info.get("vocab_checksum", got):
        raise VocabularyMismatchError(
            f"{path} does not match {os.path.join(data_dir, CORPUS_INFO)} (vocabulary checksum "
            f"{got}, prepared as {info['vocab_checksum']}): it was edited or replaced. Restore "
            f"the original, or delete {path} and re-make it with: {command}")


def check_data_dir(data_dir):
    """Checks that `data_dir` is a directory or does not exist yet.

    Raises:
      DataDirError: `data_dir` is a file.
    """
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise DataDirError(f"data_dir {data_dir} is a file, not a directory; pass a directory "
                           "(it is created when missing).")


def base_command(data_dir, info) -> str:
    """`python runners/prepare_data.py --dataset=... --data_dir=... <options>` (no records)."""
    parts = ["python", "runners/prepare_data.py", f"--dataset={info.get('dataset', '<dataset>')}",
             f"--data_dir={data_dir}", "--splits="] + list(info.get("option_flags", []))
    return " ".join(shlex.quote(p) if "<" not in p else p for p in parts)


def prepare_command(data_dir, split, layout: RecordLayout, corpus_info=None) -> str:
    """The exact `python runners/prepare_data.py ...` command that makes these records."""
    corpus_info = corpus_info if corpus_info is not None else read_corpus_info(data_dir)
    if corpus_info:
        dataset = corpus_info["dataset"]
        option_flags = corpus_info.get("option_flags", [])
    else:
        dataset, option_flags = "<dataset>", []
    parts = ["python", "runners/prepare_data.py", f"--dataset={dataset}", f"--data_dir={data_dir}",
             f"--splits={split}"] + layout.flags().split() + list(option_flags)
    return " ".join(shlex.quote(p) if "<" not in p else p for p in parts)


def layout_of(meta: dict) -> RecordLayout:
    return RecordLayout(**{k: meta[k] for k in _LAYOUT_KEYS})


def _diff(meta: dict, layout: RecordLayout, vocab_size=None):
    diffs = [f"{k}: records have {meta[k]!r}, the run asks for {getattr(layout, k)!r}"
             for k in _LAYOUT_KEYS if meta[k] != getattr(layout, k)]
    if vocab_size is not None and meta["vocab_size"] != vocab_size:
        diffs.append(f"vocab_size: records have {meta['vocab_size']}, the run asks for {vocab_size}")
    return diffs


def _missing_error(data_dir, split, layout: RecordLayout, command: str):
    """The error for records of `layout` that do not exist: a `RecordsMismatchError` listing
    how the records of other layouts differ, else a `RecordsNotFoundError`."""
    others = sorted(glob.glob(os.path.join(glob.escape(data_dir), f"record_info-{split}.*.json")))
    if not others:
        return RecordsNotFoundError(
            f"no {split} records in {data_dir} for layout {layout.basename(split)}. Make them "
            f"with:\n  {command}")
    found = []
    for other in others:
        meta = atomic.read_json(other, required=_LAYOUT_KEYS, fix=(
            f"delete it and re-make the records with: {command}"))
        found.append(f"  {os.path.basename(other)}: " + "; ".join(_diff(meta, layout)))
    return RecordsMismatchError(
        f"no {split} records in {data_dir} match the requested layout "
        f"({layout.basename(split)}). Existing {split} records differ:\n" + "\n".join(found)
        + f"\nRebuild for this run with:\n  {command}")


def find_records(data_dir, split, layout: RecordLayout, vocab_size=None, verify="size") -> dict:
    """Finds the records of `split` made for `layout` and returns their metadata dict.

    Args:
      data_dir: the directory `prepare` wrote.
      split: `"train"`, `"valid"` or `"test"`.
      layout: the `RecordLayout` the run needs.
      vocab_size: if given, must equal the records' vocabulary size.
      verify: `"none"`, `"size"` (every file exists with its recorded size; cheap) or
        `"checksum"` (also sha256 of every file).

    Returns:
      The metadata dict, with `paths`: per host, absolute file paths.

    Raises:
      RecordsNotFoundError: nothing for this split/layout (the message holds the command).
      RecordsMismatchError: records for this split exist only with other values, or the vocabulary
        in `data_dir` changed since they were written (which value differs, how to rebuild).
      RecordsCorruptError: a file is missing, has the wrong size or fails its checksum, or the
        metadata JSON / corpus-info.json is not JSON or lacks a key.
      VocabularyMismatchError: `vocab.txt` is missing or differs from `corpus-info.json`.
      DataDirError: `data_dir` is a file.
    """
    data_dir = os.fspath(data_dir)
    check_data_dir(data_dir)
    info = read_corpus_info(data_dir)
    if info is not None:
        check_vocab_file(data_dir, info)
    command = prepare_command(data_dir, split, layout, corpus_info=info)
    path = os.path.join(data_dir, info_file(layout, split))
    if not os.path.exists(path):
        raise _missing_error(data_dir, split, layout, command)
    meta = atomic.read_json(path, required=META_KEYS, fix=(
        f"delete it and re-make the records with: {command}"))
    diffs = _diff(meta, layout, vocab_size)
    if info is not None and info.get("vocab_checksum") != meta["vocab_checksum"]:
        diffs.append(f"vocab_checksum: records have {meta['vocab_checksum']}, {data_dir}/"
                     f"{VOCAB_FILE} has {info.get('vocab_checksum')}")
    if diffs:
        raise RecordsMismatchError(
            f"{split} records in {data_dir} do not match the run: " + "; ".join(diffs)
            + f". Rebuild them with:\n  {command}")
    meta["paths"] = [[os.path.join(data_dir, f) for f in host_files] for host_files in meta["files"]]
    if verify != "none":
        for host in range(layout.num_hosts):
            verify_host_files(meta, host, checksum=(verify == "checksum"), command=command)
    return meta


def verify_host_files(meta, host, checksum=False, command=""):
    """Checks that `host`'s files exist with the recorded size (and sha256 if `checksum`).

    Hashing a file is several times faster than a pass of TensorFlow's per-record CRC check and
    also catches records rewritten with valid CRCs, so the runners check the sha256 of every file
    before the first read.

    Raises:
      RecordsCorruptError: one line naming the damaged file and the command that re-makes it.
    """
    fix = (f" Re-make it with: {command}" if command
           else " Re-make it with runners/prepare_data.py.")
    for name, p in zip(meta["files"][host], meta["paths"][host]):
        if not os.path.exists(p):
            raise RecordsCorruptError(f"record file {p} is missing.{fix}")
        size = os.path.getsize(p)
        if size != meta["file_bytes"].get(name):
            raise RecordsCorruptError(f"record file {p} has {size} bytes, its metadata says "
                                      f"{meta['file_bytes'].get(name)} (truncated or overwritten).{fix}")
        if checksum and file_sha256(p) != meta["file_sha256"].get(name):
            raise RecordsCorruptError(f"record file {p} fails its sha256 checksum (corrupted).{fix}")
