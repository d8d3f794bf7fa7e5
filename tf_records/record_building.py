"""Finding a run's records and making the missing ones: from the token cache, from the corpus
built first (raw data, download), or, on a worker other than the chief, by waiting for the
chief to write them. `PreparedData.ensure_records` and `PreparedData.input_fn` are its users.

Example:

```python
metas = ensure_records(resolve(DataOptions("data/builtin")), {"train": RecordLayout(64, 8)})
```
"""
import time
from typing import Optional

from absl import logging as _log

from tf_records import corpus_info
from tf_records.data_options import DataOptions
from tf_records.errors import (CorpusError, DataError, DownloadError, RecordsMismatchError,
                               RecordsNotFoundError)
from tf_records.prepare import prepare
from tf_records.records import metadata, store
from tf_records.records.layout import RecordLayout

MISSING_RECORDS = (RecordsNotFoundError, RecordsMismatchError)


def ensure_records(options: DataOptions, layouts: dict, may_prepare: bool = True,
                   wait_seconds: float = 0.0, vocab_size: Optional[int] = None) -> dict:
    """`{split: metadata}` of the records of every split in `layouts`, the missing ones made
    (see `PreparedData.ensure_records`, which documents the arguments and errors).

    Args:
      options: the resolved `DataOptions` of the data directory.
    """
    building = corpus_info.read_corpus_info(options.data_dir) is None
    metas, missing = found_or_made(options.data_dir, layouts, vocab_size, make=may_prepare)
    if missing and may_prepare:
        _build_corpus(options, layouts, missing, building)
        made, missing = found_or_made(options.data_dir, {s: layouts[s] for s in missing},
                                      vocab_size, make=True, progress=building)
        metas.update(made)
        if missing:
            raise sorted(missing.items())[0][1]
    elif missing:
        metas.update(wait_for_chief(options.data_dir, layouts, missing, wait_seconds,
                                    vocab_size))
    return metas


def found_or_made(data_dir, layouts: dict, vocab_size, make: bool, progress: bool = False):
    """`({split: metadata}, {split: error})`: the records found (or made, with `make`), and
    why the others are missing."""
    metas, missing = {}, {}
    for split, layout in layouts.items():
        try:
            metas[split] = store.find_or_make(data_dir, split, layout, vocab_size=vocab_size,
                                              make=make,
                                              making=store.RecordMaking(progress=progress))
        except MISSING_RECORDS as error:
            missing[split] = error
    return metas, missing


def wait_for_chief(data_dir, layouts: dict, missing: dict, wait_seconds: float,
                   vocab_size) -> dict:
    """The records the chief makes within `wait_seconds`, else the first split's error."""
    first_error = sorted(missing.items())[0][1]
    deadline = time.time() + wait_seconds
    if wait_seconds > 0:
        _log.warning("waiting up to %.0f s for the chief to write the %s records in %s",
                     wait_seconds, sorted(missing), data_dir)
    metas = {}
    while missing and time.time() < deadline:
        time.sleep(1.0)
        for name in list(missing):
            try:
                metas[name] = store.find_or_make(data_dir, name, layouts[name],
                                                 vocab_size=vocab_size)
                del missing[name]
            except DataError:
                pass  # not (completely) written yet
    if missing:
        raise first_error
    return metas


def make_from_cache(data_dir, split: str, layout: RecordLayout, vocab_size, error,
                    progress: bool) -> dict:
    """The records made from the token cache; `error` (that of the missing records) when
    they cannot be made."""
    try:
        meta = store.find_or_make(data_dir, split, layout, make=True,
                                  making=store.RecordMaking(progress=progress))
    except DataError:
        raise error from None
    store.check_vocab_size(data_dir, split, layout, meta, vocab_size)
    return meta


def _build_corpus(options: DataOptions, layouts: dict, missing: dict, building: bool):
    """Builds the corpus (vocabulary, corpus info, token caches) when the records of
    `missing` cannot be made from the token caches."""
    o = options
    _log.info("making the %s records in %s", sorted(missing), o.data_dir)
    try:
        prepare(o.dataset, o.data_dir, raw_path=o.raw_path, download=o.download,
                progress=building,
                corpus_options=o.corpus_options)
    except DownloadError:
        raise
    except CorpusError as error:
        if o.download or o.raw_path:
            raise
        first_error = sorted(missing.items())[0][1]
        raise type(first_error)(_make_them_message(o, layouts, sorted(missing), error)
                                ) from None


def _make_them_message(options: DataOptions, layouts: dict, splits: list, error) -> str:
    """What to run when the records cannot be made here (no download allowed)."""
    data_dir = options.data_dir
    info = corpus_info.read_corpus_info(data_dir) or {
        "dataset": options.dataset, "option_flags": []}
    if all(layouts[s] == layouts[splits[0]] for s in splits):
        commands = [metadata.prepare_command(data_dir, ",".join(splits),
                                             layouts[splits[0]], corpus_info=info)]
    else:
        commands = [metadata.prepare_command(data_dir, s, layouts[s], corpus_info=info)
                    for s in splits]
    return (f"no {'/'.join(splits)} records for this run's layout in {data_dir} (or "
            f"they differ from it).\nMake them with:\n  " + "\n  ".join(commands)
            + f"\n(runners/train.py could not make them itself: {error})")
