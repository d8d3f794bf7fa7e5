"""Record metadata (``record_info-<basename>.json``), naming, and finding records for a run.

For split ``train`` and a layout with per-host batch 32, tgt_len 512, 8 replicas per host, 2 hosts
and 1 pass, the files in ``data_dir`` are::

    train.bsz-32.tlen-512.core-8.hosts-2.passes-1.host-000.tfrecords   # host 0's streams
    train.bsz-32.tlen-512.core-8.hosts-2.passes-1.host-001.tfrecords   # host 1's streams
    record_info-train.bsz-32.tlen-512.core-8.hosts-2.passes-1.json     # metadata (this module)

The metadata JSON holds: ``format``, ``dataset``, ``split``, ``level``, ``vocab_size``,
``vocab_checksum``, ``cutoffs``, the layout (``tgt_len``, ``per_replica_batch``,
``replicas_per_host``, ``num_hosts``, ``num_passes``, ``last_segment``, derived
``per_host_batch``, ``num_streams``), ``pass_offsets``, ``num_steps``, ``stream_length`` (tokens per
stream row), token counts (``num_tokens`` of the split, ``num_labels`` scored positions,
``tokens_dropped``), ``stream_sha256`` (of the split's token ids), ``files`` (one list per host),
``file_bytes`` and ``file_sha256`` (per file), ``records_per_host``.
"""
import glob
import hashlib
import os
import shlex

from tf_records import atomic
from tf_records.errors import RecordsCorruptError, RecordsMismatchError, RecordsNotFoundError
from tf_records.layout import RecordLayout

FORMAT = "txl-tf-records-v1"
CORPUS_INFO = "corpus-info.json"
VOCAB_FILE = "vocab.txt"

_LAYOUT_KEYS = ("tgt_len", "per_replica_batch", "replicas_per_host", "num_hosts", "num_passes",
                "last_segment")


def record_file(layout: RecordLayout, split: str, host: int) -> str:
    """File name (relative to data_dir) of ``host``'s records."""
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
    """The ``corpus-info.json`` of ``data_dir`` or None."""
    path = os.path.join(data_dir, CORPUS_INFO)
    return atomic.read_json(path) if os.path.exists(path) else None


def prepare_command(data_dir, split, layout: RecordLayout, corpus_info=None) -> str:
    """The exact ``python runners/prepare_data.py ...`` command that makes these records."""
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


def find_records(data_dir, split, layout: RecordLayout, vocab_size=None, verify="size") -> dict:
    """Finds the records of ``split`` made for ``layout`` and returns their metadata dict.

    Args:
      data_dir: the directory ``prepare`` wrote.
      split: ``"train"``, ``"valid"`` or ``"test"``.
      layout: the :class:`RecordLayout` the run needs.
      vocab_size: if given, must equal the records' vocabulary size.
      verify: ``"none"``, ``"size"`` (every file exists with its recorded size; cheap) or
        ``"checksum"`` (also sha256 of every file).

    Returns the metadata with ``paths``: per host, absolute file paths.

    Raises:
      RecordsNotFoundError: nothing for this split/layout (the message holds the command).
      RecordsMismatchError: records for this split exist only with other values, or the vocabulary
        in ``data_dir`` changed since they were written (which value differs, how to rebuild).
      RecordsCorruptError: a file is missing, has the wrong size or fails its checksum.
    """
    data_dir = os.fspath(data_dir)
    command = prepare_command(data_dir, split, layout)
    path = os.path.join(data_dir, info_file(layout, split))
    if not os.path.exists(path):
        others = sorted(glob.glob(os.path.join(glob.escape(data_dir), f"record_info-{split}.*.json")))
        if others:
            found = []
            for other in others:
                meta = atomic.read_json(other)
                found.append(f"  {os.path.basename(other)}: " + "; ".join(_diff(meta, layout)))
            raise RecordsMismatchError(
                f"no {split} records in {data_dir} match the requested layout "
                f"({layout.basename(split)}). Existing {split} records differ:\n" + "\n".join(found)
                + f"\nRebuild for this run with:\n  {command}")
        raise RecordsNotFoundError(
            f"no {split} records in {data_dir} for layout {layout.basename(split)}. Make them with:\n"
            f"  {command}")
    meta = atomic.read_json(path)
    diffs = _diff(meta, layout, vocab_size)
    info = read_corpus_info(data_dir)
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
    """Checks that ``host``'s files exist with the recorded size (and sha256 if ``checksum``)."""
    for name, p in zip(meta["files"][host], meta["paths"][host]):
        fix = f" Rebuild them with:\n  {command}" if command else ""
        if not os.path.exists(p):
            raise RecordsCorruptError(f"record file {p} is missing.{fix}")
        size = os.path.getsize(p)
        if size != meta["file_bytes"][name]:
            raise RecordsCorruptError(f"record file {p} has {size} bytes, its metadata says "
                                      f"{meta['file_bytes'][name]} (truncated or overwritten).{fix}")
        if checksum and file_sha256(p) != meta["file_sha256"][name]:
            raise RecordsCorruptError(f"record file {p} fails its sha256 checksum (corrupted).{fix}")
