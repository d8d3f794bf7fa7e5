"""The metadata of a split's records (`record_info-<basename>.json`) and their file names.

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
`file_bytes` and `file_sha256` (per file), `records_per_host`, and `info_sha256`: the sha256
of all the other keys (`info_checksum`), so that a hand-edited file (another `num_steps`, ...)
is refused instead of changing what is read.

Finding the records of a run, and making missing ones, is `tf_records.records.store`.
"""
import hashlib
import json
import os
import shlex

from tf_records import data_dir_layout
from tf_records.corpus_info import read_corpus_info
from tf_records.errors import RecordsCorruptError
from tf_records.records.layout import LAST_SEGMENT_POLICIES, RecordLayout
from untrusted_files import reading
from untrusted_files import schema as s

LAYOUT_KEYS = ("tgt_len", "per_replica_batch", "replicas_per_host", "num_hosts", "num_passes",
               "last_segment")
# Keys a reader needs: a file without one of them is damaged (RecordsCorruptError), never a KeyError.
META_KEYS = LAYOUT_KEYS + ("vocab_size", "vocab_checksum", "files", "file_bytes", "file_sha256",
                           "num_steps")
_COUNT = s.Int(1, s.INT32_MAX)
# The declared shape of a record_info-*.json: every field a reader uses, its type and range;
# file names are plain names (a record file outside data_dir is never named).
META_FIELDS = {
    "split": s.Str(max_len=256), "tgt_len": _COUNT, "per_replica_batch": _COUNT,
    "replicas_per_host": _COUNT, "num_hosts": _COUNT, "num_passes": _COUNT,
    "last_segment": s.Str(choices=LAST_SEGMENT_POLICIES), "vocab_size": _COUNT,
    "vocab_checksum": s.Str(max_len=128), "num_steps": s.Int(0, s.INT64_MAX),
    "files": s.ListOf(s.ListOf(s.Str(plain_name=True), max_len=1 << 16), max_len=1 << 16),
    "file_bytes": s.MapOf(s.Int(0)), "file_sha256": s.MapOf(s.Str(max_len=64)),
    "info_sha256": s.Str(max_len=64), "num_tokens": s.Int(0), "stream_length": s.Int(0),
}
META_SCHEMA = s.Obj(META_FIELDS, required=META_KEYS)
LAYOUT_SCHEMA = s.Obj(META_FIELDS, required=LAYOUT_KEYS)


def record_file(layout: RecordLayout, split: str, host: int) -> str:
    """File name (relative to data_dir) of `host`'s records."""
    return data_dir_layout.record_file(layout.basename(split), host)


def info_file(layout: RecordLayout, split: str) -> str:
    """Metadata file name (relative to data_dir)."""
    return data_dir_layout.info_file(layout.basename(split))


def info_checksum(meta: dict) -> str:
    """The sha256 of the metadata's own content: its keys but `info_sha256`, the
    `write_seconds` timing and the `paths` a reader adds, as sorted compact JSON."""
    content = {k: v for k, v in meta.items()
               if k not in ("info_sha256", "write_seconds", "paths")}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_info_checksum(meta: dict, path: str, command: str) -> None:
    """Raises `RecordsCorruptError` when `meta` (read from `path`) records an `info_sha256`
    that its content no longer matches (older files without one are accepted)."""
    recorded = meta.get("info_sha256")
    if recorded is not None and recorded != info_checksum(meta):
        raise RecordsCorruptError(
            f"{path} was changed after it was written (its content no longer matches its "
            f"info_sha256); delete it and re-make the records with: {command}")


def check_names(meta: dict, path: str, split: str, layout: RecordLayout, command: str) -> None:
    """Raises `RecordsCorruptError` when the metadata read from `path` (the file of `split`
    and `layout`) says it is another split's, or names record files of another split or
    layout: a train record_info copied under the valid name would score the train records
    as valid ones."""
    recorded = meta.get("split", split)
    prefix = layout.basename(split) + ".host-"
    names = [name for host in meta["files"] for name in host]
    wrong = next((name for name in names if not name.startswith(prefix)), None)
    if recorded != split or wrong is not None:
        what = (f"records split {recorded!r}" if recorded != split
                else f"names the record file {wrong!r}")
        raise RecordsCorruptError(
            f"{path} {what}, but its name is that of the {split} records of layout "
            f"{layout.basename(split)}: it was copied or renamed from another split or "
            f"layout. Delete it and re-make the records with: {command}")


def file_sha256(path) -> str:
    h = hashlib.sha256()
    fd = reading.open_checked(path, inside=os.path.dirname(os.path.abspath(path)),
                              max_bytes=s.INT64_MAX, error=RecordsCorruptError,
                              name=f"record file {path}")
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


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


def diff(meta: dict, layout: RecordLayout, vocab_size=None) -> list:
    """`key: records have ..., the run asks for ...` for every value of `meta` that differs
    from `layout` (and from `vocab_size` when given)."""
    diffs = [f"{k}: records have {meta[k]!r}, the run asks for {getattr(layout, k)!r}"
             for k in LAYOUT_KEYS if meta[k] != getattr(layout, k)]
    if vocab_size is not None and meta["vocab_size"] != vocab_size:
        diffs.append(f"vocab_size: records have {meta['vocab_size']}, the run asks for {vocab_size}")
    return diffs


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
        try:
            fd = reading.open_checked(p, inside=os.path.dirname(os.path.abspath(p)),
                                      max_bytes=s.INT64_MAX, error=RecordsCorruptError,
                                      name=f"record file {p}")
        except FileNotFoundError:
            raise RecordsCorruptError(f"record file {p} is missing.{fix}") from None
        size = os.fstat(fd).st_size
        os.close(fd)
        if size != meta["file_bytes"].get(name):
            raise RecordsCorruptError(f"record file {p} has {size} bytes, its metadata says "
                                      f"{meta['file_bytes'].get(name)} (truncated or overwritten).{fix}")
        if checksum and file_sha256(p) != meta["file_sha256"].get(name):
            raise RecordsCorruptError(f"record file {p} fails its sha256 checksum (corrupted).{fix}")
