"""`prepare`: corpus -> vocabulary, corpus info, cached token streams and TFRecords.

Files made in `data_dir`:

```
vocab.txt                 the vocabulary (one symbol per line, id order; see vocab/vocabulary.py)
corpus-info.json          dataset, level, options, vocab_size, vocab_checksum, cutoffs,
                          text rules, token counts per split, corpus-specific facts
<split>.ids.bin / .json   the encoded stream of each split (int32 LE) + description
<records>.tfrecords, record_info-<...>.json   per requested split/layout (see records/metadata.py)
raw/                      downloaded archives
```

Re-running with the same dataset/options and existing matching records is a fast no-op. A
`data_dir` prepared for another dataset or other data options is refused (use another
directory).
"""
import os
import sys
import time
from typing import Optional

from tf_records import atomic, corpus_info, data_dir_layout
from tf_records.corpora import get_corpus
from tf_records.errors import DataError
from tf_records.records import metadata, store, stream_cache
from tf_records.records.layout import RecordLayout, RecordPlan
from tf_records.vocab.choice import too_small_warning


def _log(progress, text):
    if progress:
        print(text, file=sys.stderr, flush=True)


def options_diff(recorded: dict, given: dict) -> str:
    """`key: recorded -> given` for every corpus option that differs, e.g.
    `level: 'word' -> 'char'; lower_case: False -> True`."""
    keys = sorted(set(recorded) | set(given))
    return "; ".join(f"{k}: {recorded.get(k)!r} -> {given.get(k)!r}" for k in keys
                     if recorded.get(k) != given.get(k))


def _check_same_options(data_dir, info, corpus):
    if info.get("options") != corpus.fingerprint():
        raise DataError(
            f"{data_dir} already holds {corpus.name} prepared with other options (recorded -> "
            f"given): {options_diff(info.get('options') or {}, corpus.fingerprint())}. Leave "
            "these flags out to use it as prepared, or give another --data_dir for the new data.")


def recorded_corpus(data_dir, dataset=None, raw_path=None, options=None):
    """The dataset and corpus options to prepare (or reuse) `data_dir` with: what its
    `corpus-info.json` records, overridden by the `options` given (and, for the `text`
    corpus, `raw_path` as `train_path`). Options only need repeating to change them.

    Args:
      data_dir: a prepared (or new) data directory.
      dataset: the dataset asked for, or None (the recorded one; `builtin` for a new
        directory).
      raw_path: the raw file given, if any.
      options: corpus options given.

    Returns:
      `(dataset, options)`; for a new directory or another dataset, the given ones.

    Raises:
      DataError: the given options change what `data_dir` holds (the message lists
        `key: recorded -> given`), or are not options of the dataset.
    """
    info = corpus_info.read_corpus_info(data_dir)
    recorded = info is not None and "dataset" in info and dataset in (None, info["dataset"])
    dataset = info["dataset"] if recorded else (dataset or "builtin")
    given = dict(options or {})
    if dataset == "text" and raw_path and not given.get("train_path"):
        given["train_path"] = os.path.abspath(raw_path)
    if not recorded:
        return dataset, given
    defaults = get_corpus(dataset).OPTIONS
    options = {k: v for k, v in (info.get("options") or {}).items()
               if k not in defaults or defaults[k] != v}  # the fingerprint fills in the rest
    options.update(given)
    _check_same_options(data_dir, info, get_corpus(dataset, **options))
    return dataset, options


def _check_layouts(dataset, corpus, layouts):
    for split, layout in layouts.items():
        if split not in corpus.splits:
            raise DataError(f"unknown split {split!r} for {dataset}; splits: {list(corpus.splits)}.")
        if not isinstance(layout, RecordLayout):
            raise DataError(f"layouts[{split!r}] must be a RecordLayout, got {layout!r}.")


def _check_existing(data_dir, dataset, corpus):
    """The corpus info of `data_dir` (None when new), refusing another dataset or options and
    an edited vocabulary (which is never overwritten)."""
    info = corpus_info.read_corpus_info(data_dir)
    if info is None:
        return None
    if os.path.exists(os.path.join(data_dir, data_dir_layout.VOCAB_FILE)):
        corpus_info.check_vocab_file(data_dir, info)
    if info.get("dataset") != dataset:
        raise DataError(f"{data_dir} already holds {info.get('dataset')}, not {dataset}. Use "
                        "another --data_dir (or delete this one).")
    _check_same_options(data_dir, info, corpus)
    return info


def _is_cached(data_dir, info, descs) -> bool:
    """Whether the vocabulary and every split's token cache are there and belong together."""
    return (info is not None and os.path.exists(os.path.join(data_dir, data_dir_layout.VOCAB_FILE))
            and all(d is not None and d["vocab_checksum"] == info["vocab_checksum"]
                    for d in descs.values()))


def _build(dataset, corpus, data_dir, raw_path, download, progress, descs):
    """Builds the corpus: writes the vocabulary, the token caches (into `descs`) and
    corpus-info.json; returns `(info, {split: tokens})`."""
    built = corpus.build(data_dir, raw_path=raw_path, download=download, progress=progress)
    vocab = built.vocab
    checksum = vocab.checksum()
    vocab.save(os.path.join(data_dir, data_dir_layout.VOCAB_FILE))
    for split, tokens in built.streams.items():
        descs[split] = stream_cache.save(data_dir, split, tokens, checksum)
    info = {
        "format": corpus_info.FORMAT,
        "dataset": dataset,
        "level": vocab.level,
        "options": corpus.fingerprint(),
        "option_flags": corpus.option_flags(),
        "vocab_size": len(vocab),
        "vocab_checksum": checksum,
        "specials": vocab.specials,
        "unk_symbol": vocab.unk_symbol,
        "unk_policy": vocab.unk_policy,
        "cutoffs": list(corpus.cutoffs),
        "text_rules": built.rules.to_dict(),
        "num_tokens": {s: d["num_tokens"] for s, d in descs.items()},
        **built.info,
    }
    atomic.write_json(os.path.join(data_dir, data_dir_layout.CORPUS_INFO_FILE), info)
    warning = too_small_warning("train", info["num_tokens"].get("train", 0), len(vocab),
                                vocab.level) if "train" in descs else None
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return info, built.streams


def _records(data_dir, split, layout, tokens, seed, progress) -> dict:
    """The summary of `split`'s records for `layout`: the current ones, else written now (from
    `tokens`, or the token cache when None)."""
    meta = store.find_or_make(data_dir, split, layout, make=True, tokens=tokens,
                              making=store.RecordMaking(remake_damaged=True, seed=seed,
                                                        progress=progress))
    return {"info_file": metadata.info_file(layout, split), "files": meta["files"],
            "num_steps": meta["num_steps"], "written": meta["written"]}


def prepare(dataset, data_dir, records: Optional[RecordPlan] = None, raw_path=None,
            download=True, progress=True, corpus_options=None, **options) -> dict:
    """Prepares `dataset` in `data_dir` and returns a summary dict.

    Args:
      dataset: a name in `tf_records.CORPORA`.
      data_dir: output directory (created).
      records: the records to write (`RecordPlan`: `{split: RecordLayout}` and the seed of the
        rotation offsets for `num_passes > 1`); None: vocabulary, corpus info and token caches
        only.
      raw_path: an archive / text file already on disk (no download).
      download: allow downloading the canonical archive when it is not in `data_dir/raw`.
      progress: show progress on stderr.
      corpus_options: {option: value} of the corpus (see each corpus module), e.g.
        `{"full_bytes": True}`; the way to give a corpus' own `seed`.
      **options: more corpus options, e.g. `full_bytes=True`.

    Returns:
      `{"dataset", "data_dir", "level", "vocab_size", "vocab_checksum", "num_tokens":
      {split: n}, "records": {split: {"info_file", "files", "num_steps", "written"}},
      "seconds"}`, and the corpus' `min_freq_chosen` and `unk_tokens` ({split: n}) when it
      records them.

    Raises:
      DataError: another dataset or other options than `data_dir` holds, an unknown split,
        or bad corpus data (`CorpusError`, `DownloadError`, ...).

    Example:

    ```python
    tf_records.prepare("enwik8", "data/enwik8",
                       tf_records.RecordPlan({"train": tf_records.RecordLayout(512, 22)}))
    ```
    """
    start = time.time()
    data_dir = os.fspath(data_dir)
    corpus_options = {**(corpus_options or {}), **options}
    if raw_path and dataset == "text" and not corpus_options.get("train_path"):
        # For the text corpus the file is the data: make it part of the options (fingerprint).
        corpus_options["train_path"], raw_path = os.path.abspath(raw_path), None
    corpus = get_corpus(dataset, **corpus_options)
    records = records or RecordPlan()
    layouts = dict(records.layouts)
    _check_layouts(dataset, corpus, layouts)
    store.check_data_dir(data_dir)
    atomic.ensure_dir(data_dir)
    info = _check_existing(data_dir, dataset, corpus)
    descs = {s: stream_cache.describe(data_dir, s) for s in corpus.splits}
    if _is_cached(data_dir, info, descs):
        _log(progress, f"{dataset} vocabulary and token streams already in {data_dir}")
        streams_in_memory = {}
    else:
        _log(progress, f"building {dataset} in {data_dir} ...")
        info, streams_in_memory = _build(dataset, corpus, data_dir, raw_path, download,
                                         progress, descs)
    written = {split: _records(data_dir, split, layout, streams_in_memory.get(split),
                               records.seed, progress)
               for split, layout in layouts.items()}
    return {"dataset": dataset, "data_dir": data_dir, "level": info["level"],
            "vocab_size": info["vocab_size"], "vocab_checksum": info["vocab_checksum"],
            "num_tokens": info["num_tokens"], "records": written,
            **{k: info[k] for k in ("min_freq_chosen", "unk_tokens") if k in info},
            "seconds": round(time.time() - start, 3)}
