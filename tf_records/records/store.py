"""A split's records for a layout, found in a data directory or made from its token cache.

This is the one place that looks for records and makes the missing ones: `tf_records.prepare`
(after building the corpus), `tf_records.PreparedData` (training, evaluation) and the readers
(`tf_records.make_input_fn`) all come here.

- `find_records(data_dir, split, layout)`: the metadata of the records made for exactly
  `layout` (and the vocabulary `data_dir` holds), or an error naming what differs and the
  `runners/prepare_data.py` command that makes them.
- `find_or_make(data_dir, split, layout, make=True)`: the same, and when they are missing (or
  made for another layout or vocabulary) they are written from the split's token cache
  (`<split>.ids.bin`), never from raw data.

Example:

```python
meta = find_or_make("data/builtin", "train", RecordLayout(64, 8), make=True)
meta["paths"][0], meta["num_steps"], meta["written"]
```
"""
import dataclasses
import glob
import os

from tf_records import atomic, data_dir_layout
from tf_records.corpus_info import check_vocab_file, read_corpus_info
from tf_records.errors import (DataDirError, RecordsCorruptError, RecordsMismatchError,
                               RecordsNotFoundError)
from tf_records.progress import Progress
from tf_records.records import metadata, stream_cache, writer
from tf_records.records.layout import RecordLayout
from untrusted_files import dir_kinds
from untrusted_files.reading import MAX_RECORD_INFO_BYTES

_MISSING = (RecordsNotFoundError, RecordsMismatchError)


@dataclasses.dataclass(frozen=True)
class RecordMaking:
    """How `find_or_make` makes records (with `make`).

    Attributes:
      remake_damaged: check found records (every file's sha256, and their token stream against
        the token cache) and rewrite damaged or stale ones (what `prepare` does); False uses
        found records as their metadata describes them (each host checks its files when it
        reads them).
      seed: seed of the rotation offsets when `layout.num_passes > 1`.
      progress: show a progress bar while writing.
    """
    remake_damaged: bool = False
    seed: int = 0
    progress: bool = False


def check_data_dir(data_dir):
    """Raises `DataDirError` when `data_dir` is a file, or a directory of another kind than a
    data directory (a model, preset or export directory: `untrusted_files.dir_kinds`), before
    anything is read or written there (a missing one is made later)."""
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise DataDirError(f"data_dir {data_dir} is a file, not a directory; pass a directory "
                           "(it is created when missing).")
    dir_kinds.check_kind(data_dir, dir_kinds.DATA, f"data_dir {data_dir}", DataDirError)


def _missing_error(data_dir, split, layout: RecordLayout, command: str):
    """The error for records of `layout` that do not exist: a `RecordsMismatchError` listing
    how the records of other layouts differ, else a `RecordsNotFoundError`."""
    pattern = data_dir_layout.info_file_pattern(split)
    others = sorted(glob.glob(os.path.join(glob.escape(data_dir), pattern)))
    if not others:
        return RecordsNotFoundError(
            f"no {split} records in {data_dir} for layout {layout.basename(split)}. Make them "
            f"with:\n  {command}")
    found = []
    for other in others:
        meta = atomic.read_json(other, schema=metadata.LAYOUT_SCHEMA,
                                max_bytes=MAX_RECORD_INFO_BYTES, fix=(
            f"delete it and re-make the records with: {command}"))
        found.append(f"  {os.path.basename(other)}: " + "; ".join(metadata.diff(meta, layout)))
    return RecordsMismatchError(
        f"no {split} records in {data_dir} match the requested layout "
        f"({layout.basename(split)}). Existing {split} records differ:\n" + "\n".join(found)
        + f"\nRebuild for this run with:\n  {command}")


def _mismatch_error(data_dir, split, diffs, command):
    return RecordsMismatchError(f"{split} records in {data_dir} do not match the run: "
                                + "; ".join(diffs) + f". Rebuild them with:\n  {command}")


def _with_paths(data_dir, meta: dict) -> dict:
    """`meta` with `paths`: per host, the absolute paths of its files."""
    meta["paths"] = [[os.path.join(data_dir, f) for f in host_files]
                     for host_files in meta["files"]]
    return meta


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
    command = metadata.prepare_command(data_dir, split, layout, corpus_info=info)
    path = os.path.join(data_dir, metadata.info_file(layout, split))
    if not os.path.lexists(path):
        raise _missing_error(data_dir, split, layout, command)
    meta = atomic.read_json(path, schema=metadata.META_SCHEMA, max_bytes=MAX_RECORD_INFO_BYTES,
                            fix=f"delete it and re-make the records with: {command}")
    metadata.check_info_checksum(meta, path, command)
    metadata.check_names(meta, path, split, layout, command)
    diffs = metadata.diff(meta, layout, vocab_size)
    if info is not None and info.get("vocab_checksum") != meta["vocab_checksum"]:
        diffs.append(f"vocab_checksum: records have {meta['vocab_checksum']}, {data_dir}/"
                     f"{data_dir_layout.VOCAB_FILE} has {info.get('vocab_checksum')}")
    if diffs:
        raise _mismatch_error(data_dir, split, diffs, command)
    _with_paths(data_dir, meta)
    if verify != "none":
        for host in range(layout.num_hosts):
            metadata.verify_host_files(meta, host, checksum=(verify == "checksum"),
                                       command=command)
    return meta


def check_vocab_size(data_dir, split, layout: RecordLayout, meta: dict, vocab_size=None):
    """Raises `RecordsMismatchError` when `vocab_size` is given and the records' differs (the
    message names both and the command that rebuilds the records)."""
    diffs = metadata.diff(meta, layout, vocab_size)
    if diffs:
        raise _mismatch_error(data_dir, split, diffs,
                              metadata.prepare_command(data_dir, split, layout))


def _found(data_dir, split, layout, remake_damaged):
    """`(metadata dict or None, error)`: the records found, else why they must be (re)made.

    Without `remake_damaged` the records are used as their metadata describes them, and only
    missing or mismatching ones come back as an error; with it, their files are checked by
    sha256 and their token stream against the token cache, and damaged or stale records come
    back as an error too."""
    try:
        meta = find_records(data_dir, split, layout,
                            verify="checksum" if remake_damaged else "none")
    except _MISSING as error:
        return None, error
    except RecordsCorruptError as error:
        if not remake_damaged:
            raise
        return None, error
    cache = stream_cache.describe(data_dir, split) if remake_damaged else None
    if cache is not None and meta.get("stream_sha256") != cache["sha256"]:
        return None, RecordsMismatchError(f"the {split} records in {data_dir} were made from "
                                          "another token stream than its token cache.")
    return meta, None


def find_or_make(data_dir, split, layout: RecordLayout, *, vocab_size=None, make=False,
                 tokens=None, making: RecordMaking = RecordMaking()) -> dict:
    """The records of `split` for `layout`: found, else made from the split's token cache.

    Args:
      data_dir: a data directory (prepared, when records are to be made).
      split: `"train"`, `"valid"` or `"test"`.
      layout: the run's `RecordLayout`.
      vocab_size: if given, the records' vocabulary size must equal it (checked after they
        are found or made: their vocabulary is the directory's).
      make: write missing records (or records of another layout or vocabulary) from `tokens`
        or the token cache; False only finds them.
      tokens: int32 `[N]` ids of the split, when they are in memory (default: the token cache).
      making: how records are checked and made (`RecordMaking`: remake_damaged, seed,
        progress).

    Returns:
      The metadata dict of `find_records` (with `paths`), and `written`: whether the records
      were written now.

    Raises:
      RecordsNotFoundError, RecordsMismatchError: not found, and not made (`make` False, or
        `data_dir` has no corpus info or no token cache of `split` for its vocabulary), or of
        another `vocab_size`; the message holds the `runners/prepare_data.py` command that
        makes them.
      DataError: damaged files (`RecordsCorruptError`, `VocabularyMismatchError`), a corpus too
        short for the layout (`LayoutError`), a full or read-only disk (`StorageError`).
    """
    data_dir = os.fspath(data_dir)
    check_data_dir(data_dir)
    meta, error = _found(data_dir, split, layout, making.remake_damaged)
    written = meta is None
    if written:
        meta = _make(data_dir, split, layout, error, make, tokens, making)
    check_vocab_size(data_dir, split, layout, meta, vocab_size)
    return dict(meta, written=written)


def _make(data_dir, split, layout, error, make, tokens, making: RecordMaking) -> dict:
    """Writes the records from `tokens` or the token cache; raises `error` (why they are
    needed) when not `make` or there is no token cache of the directory's vocabulary."""
    if not make:
        raise error
    info = read_corpus_info(data_dir)
    cache = stream_cache.describe(data_dir, split)
    if info is None or cache is None or cache["vocab_checksum"] != info.get("vocab_checksum"):
        raise error
    if tokens is None:
        tokens = stream_cache.load(data_dir, split)
    bar = Progress(f"records {layout.basename(split)}", unit="k records", scale=1e3,
                   enabled=bool(making.progress))
    meta = writer.write_records(data_dir, split, tokens, layout, corpus_info=info,
                                stream_sha256=cache["sha256"], seed=making.seed,
                                progress=bar.update)
    bar.close()
    return _with_paths(data_dir, meta)
