"""A prepared data directory: its corpus, its records for a layout, its input pipelines.

`PreparedData` is the one object the training and evaluation libraries use for "the data":
it reuses the dataset and corpus options `data_dir/corpus-info.json` records (given options
override them), finds the records a run's layouts need and makes the missing ones (from the
token cache, the raw data or the corpus downloaded on first use), builds input functions,
and copies the vocabulary files into a model directory.

Example:

```python
data = tf_records.PreparedData(tf_records.DataOptions(data_dir="data/builtin"))
layouts = {"train": data.layout(tgt_len=64, per_replica_batch=8)}
data.ensure_records(layouts)
dataset = data.input_fn("train", layouts["train"], repeat=True)(None)
```
"""
import dataclasses

import os
import time
from typing import Callable, Optional, Union

import numpy as np
from absl import logging as _log

from tf_records import atomic, corpus_info
from tf_records.errors import (CorpusError, DataDirError, DataError, DownloadError,
                               RecordsMismatchError, RecordsNotFoundError)
from tf_records.prepare import prepare, recorded_corpus
from tf_records.records import metadata, store
from tf_records.records.layout import RecordLayout
from tf_records.records.reader import records_input_fn
from tf_records.records.stream_cache import load as load_token_stream
from tf_records.vocab import model_vocab
from untrusted_files import reading


_MISSING = (RecordsNotFoundError, RecordsMismatchError)


@dataclasses.dataclass
class DataOptions:
    """Where the data is and how to make it when it is missing.

    Attributes:
      data_dir: Prepared data directory (made on first use: vocabulary, token caches, records).
      dataset: Corpus (builtin, synthetic, text, enwik8, text8, wt103, wt2, ptb, lm1b). A
        prepared data_dir keeps the one its corpus-info.json records unless another is given
        (None: the recorded one).
      raw_path: A corpus archive or text file already on disk (no download).
      download: Download the corpus archive when it is not in data_dir/raw (in a
        multi-worker run, the chief downloads it).
      corpus_options: Corpus options given (the others are the recorded ones).
    """
    data_dir: str = "data/builtin"
    dataset: Optional[str] = "builtin"
    raw_path: Optional[str] = None
    download: bool = True
    corpus_options: dict = dataclasses.field(default_factory=dict)


def _resolve(options: DataOptions) -> DataOptions:
    """`options` with the dataset and corpus options data_dir/corpus-info.json records,
    overridden by the given ones; a given dataset other than the recorded one is an error.

    Raises:
      DataError: the dataset differs from the recorded one, or the given options change
        what `data_dir` holds. DataDirError: `data_dir` is a file, or a directory of another
        kind (a model, preset or export directory).
    """
    if os.path.isdir(options.data_dir):  # a file is refused where the directory is made
        store.check_data_dir(options.data_dir)
    info = corpus_info.read_corpus_info(options.data_dir) or {}
    if info.get("dataset") and options.dataset and info["dataset"] != options.dataset:
        raise DataError(f"--data_dir={options.data_dir} holds {info['dataset']!r}, not "
                        f"--dataset={options.dataset!r}; fix one of the two.")
    dataset, corpus_options = recorded_corpus(options.data_dir, options.dataset,
                                              options.raw_path, options.corpus_options)
    return dataclasses.replace(options, dataset=dataset, corpus_options=corpus_options)


def unigram_entropy(tokens) -> Optional[float]:
    """Entropy (nats/token) of the frequencies of the ids in `tokens` (int [N]); None when
    empty. The loss of the best model of these very tokens that ignores context."""
    counts = np.bincount(np.asarray(tokens, np.int64).reshape(-1))
    if not counts.sum():
        return None
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


class PreparedData:
    """A prepared (or to be prepared) data directory.

    Args:
      options: a `DataOptions`, or a data directory whose recorded dataset and corpus
        options are used as they are (nothing is downloaded for it).

    Raises:
      DataError: the given dataset or corpus options contradict what `data_dir` holds.
    """

    def __init__(self, options: Union[DataOptions, str, os.PathLike]):
        if not isinstance(options, DataOptions):
            options = DataOptions(data_dir=os.fspath(options), dataset=None, download=False)
        self.options = _resolve(options)
        self._metas = {}   # {split: metadata} of the records ensure_records found or made
        self._found = {}   # {(split, layout): metadata}: the same, for input_fn to reuse

    @property
    def data_dir(self) -> str:
        return self.options.data_dir

    @property
    def dataset(self) -> str:
        return self.options.dataset

    @property
    def corpus_options(self) -> dict:
        return self.options.corpus_options

    @property
    def info(self) -> Optional[dict]:
        """The directory's corpus-info.json, or None before it is prepared."""
        return corpus_info.read_corpus_info(self.data_dir)

    def _info_or_records(self, key, default=None):
        info = self.info or {}
        if key in info:
            return info[key]
        meta = self._metas.get("train") or next(iter(self._metas.values()), {})
        return meta.get(key, default)

    @property
    def level(self) -> str:
        """`byte`, `char` or `word` (valid after `ensure_records`)."""
        return self._info_or_records("level", "word")

    @property
    def vocab_size(self) -> Optional[int]:
        """The vocabulary size V (valid after `ensure_records`)."""
        size = self._info_or_records("vocab_size")
        return None if size is None else int(size)

    @property
    def cutoffs(self) -> tuple:
        """The corpus' adaptive-softmax cutoffs (empty when it records none)."""
        return tuple((self.info or {}).get("cutoffs", ()))

    def layout(self, tgt_len: int, per_replica_batch: int, replicas_per_host: int = 1,
               hosts: int = 1, num_passes: int = 1, last_segment: str = "drop") -> RecordLayout:
        """The `RecordLayout` of a run (see `tf_records.records.layout`)."""
        return RecordLayout(tgt_len, per_replica_batch, replicas_per_host, hosts,
                            num_passes=num_passes, last_segment=last_segment)

    def prepare(self, layouts: Optional[dict] = None, progress: bool = True,
                seed: int = 0) -> dict:
        """Prepares the directory and the records of `layouts` (see `tf_records.prepare`).

        Args:
          layouts: `{split: RecordLayout}` (None: vocabulary, corpus info and token caches).
          progress: show progress on stderr.
          seed: seed of the rotation offsets when a layout has `num_passes > 1`.

        Returns:
          The summary dict of `tf_records.prepare`.
        """
        o = self.options
        return prepare(o.dataset, self.data_dir, layouts=layouts, raw_path=o.raw_path,
                       download=o.download, progress=progress, seed=seed,
                       corpus_options=o.corpus_options)

    def ensure_records(self, layouts: dict, may_prepare: bool = True,
                       wait_seconds: float = 0.0, vocab_size: Optional[int] = None) -> dict:
        """Finds the records of every split in `layouts`, making the missing ones.

        Missing records are made from the token cache of a directory already prepared
        (silently), else the corpus is built first from the raw data (the built-in and
        synthetic corpora, `raw_path`, data_dir/raw, or the corpus archive downloaded with a
        progress bar and checked when `download`); a failed download is one line naming the
        URL and --raw_path. Other hosts' record files need not be on this machine: each host's
        input_fn checks its own.

        Args:
          layouts: `{split: RecordLayout}`.
          may_prepare: False on a non-chief worker: the chief makes the records.
          wait_seconds: how long a non-chief worker waits for them to appear.
          vocab_size: if given, the records' vocabulary size must equal it.

        Returns:
          `{split: metadata dict}` (see `tf_records.records.store.find_or_make`).

        Raises:
          RecordsNotFoundError: the records are missing and cannot be made here; the message
            holds the exact `prepare_data.py` command that makes them.
          RecordsMismatchError: as above, when records of another layout exist.
          DownloadError: the corpus archive could not be downloaded.
          DataError: any other bad or damaged data.
        """
        building = self.info is None
        metas, missing = self._records(layouts, vocab_size, make=may_prepare)
        if missing and may_prepare:
            self._build(layouts, missing, building)
            made, missing = self._records({s: layouts[s] for s in missing}, vocab_size,
                                          make=True, progress=building)
            metas.update(made)
            if missing:
                raise sorted(missing.items())[0][1]
        elif missing:
            metas.update(self._wait_for_chief(layouts, missing, wait_seconds, vocab_size))
        self._metas.update(metas)
        self._found.update({(split, layouts[split]): meta for split, meta in metas.items()})
        return metas

    def _records(self, layouts, vocab_size, make, progress=False):
        """`({split: metadata}, {split: error})`: the records found or made, and why the
        others are missing."""
        metas, missing = {}, {}
        for split, layout in layouts.items():
            try:
                metas[split] = store.find_or_make(self.data_dir, split, layout,
                                                  vocab_size=vocab_size, make=make,
                                                  progress=progress)
            except _MISSING as error:
                missing[split] = error
        return metas, missing

    def _wait_for_chief(self, layouts, missing, wait_seconds, vocab_size) -> dict:
        """The records the chief makes within `wait_seconds`, else the first split's error."""
        first_error = sorted(missing.items())[0][1]
        deadline = time.time() + wait_seconds
        if wait_seconds > 0:
            _log.warning("waiting up to %.0f s for the chief to write the %s records in %s",
                         wait_seconds, sorted(missing), self.data_dir)
        metas = {}
        while missing and time.time() < deadline:
            time.sleep(1.0)
            for name in list(missing):
                try:
                    metas[name] = store.find_or_make(self.data_dir, name, layouts[name],
                                                     vocab_size=vocab_size)
                    del missing[name]
                except DataError:
                    pass  # not (completely) written yet
        if missing:
            raise first_error
        return metas

    def _build(self, layouts, missing, building):
        """Builds the corpus (vocabulary, corpus info, token caches) when the records of
        `missing` cannot be made from the token caches."""
        o = self.options
        _log.info("making the %s records in %s", sorted(missing), self.data_dir)
        try:
            prepare(o.dataset, self.data_dir, raw_path=o.raw_path, download=o.download,
                    progress=building,
                    corpus_options=o.corpus_options)
        except DownloadError:
            raise
        except CorpusError as error:
            if o.download or o.raw_path:
                raise
            first_error = sorted(missing.items())[0][1]
            raise type(first_error)(self._make_them_message(layouts, sorted(missing), error)
                                    ) from None

    def _make_them_message(self, layouts, splits, error) -> str:
        """What to run when the records cannot be made here (no download allowed)."""
        info = corpus_info.read_corpus_info(self.data_dir) or {
            "dataset": self.dataset, "option_flags": []}
        if all(layouts[s] == layouts[splits[0]] for s in splits):
            commands = [metadata.prepare_command(self.data_dir, ",".join(splits),
                                                 layouts[splits[0]], corpus_info=info)]
        else:
            commands = [metadata.prepare_command(self.data_dir, s, layouts[s], corpus_info=info)
                        for s in splits]
        return (f"no {'/'.join(splits)} records for this run's layout in {self.data_dir} (or "
                f"they differ from it).\nMake them with:\n  " + "\n  ".join(commands)
                + f"\n(runners/train.py could not make them itself: {error})")

    def input_fn(self, split: str, layout: RecordLayout, repeat: bool = False,
                 start_step: int = 0, verify: str = "checksum",
                 vocab_size: Optional[int] = None, make_from_cache: bool = False,
                 progress: bool = True) -> Callable:
        """`input_fn(input_context=None) -> tf.data.Dataset` of `split`'s records.

        Args:
          split: `train`, `valid` or `test`.
          layout: the run's `RecordLayout`.
          repeat: repeat forever (training); False yields each step once.
          start_step: the global step to start at (see `tf_records.make_input_fn`).
          verify: `checksum`, `size` or `none`: how each host checks its files.
          vocab_size: the records' vocabulary size must equal it (default: `vocab_size`
            when known).
          make_from_cache: make missing records from the token streams cached in data_dir
            (never downloads); when that fails, the error of the missing records (with the
            `prepare_data.py` command) is raised.
          progress: show a progress bar while making records.

        Returns:
          The input function; its metadata dict is `input_fn.metadata`.

        Raises:
          RecordsNotFoundError, RecordsMismatchError: no records for `layout`.
          DataError: damaged or mismatching files.
        """
        if vocab_size is None and self._metas:
            vocab_size = self.vocab_size
        meta = self._found.get((split, layout))
        if meta is not None:  # found by ensure_records: the records are looked up once
            store.check_vocab_size(self.data_dir, split, layout, meta, vocab_size)
        else:
            try:
                meta = store.find_or_make(self.data_dir, split, layout, vocab_size=vocab_size)
            except _MISSING as error:
                if not make_from_cache:
                    raise
                meta = self._make_from_cache(split, layout, vocab_size, error, progress)
            self._found[(split, layout)] = meta
        return records_input_fn(self.data_dir, split, layout, meta, repeat=repeat,
                                start_step=start_step, verify=verify)

    def _make_from_cache(self, split, layout, vocab_size, error, progress) -> dict:
        """The records made from the token cache; `error` (that of the missing records) when
        they cannot be made."""
        try:
            meta = store.find_or_make(self.data_dir, split, layout, make=True,
                                      progress=progress)
        except DataError:
            raise error from None
        store.check_vocab_size(self.data_dir, split, layout, meta, vocab_size)
        return meta

    def unigram_entropy(self, split: str = "train",
                        max_tokens: int = 50_000_000) -> Optional[float]:
        """Entropy (nats/token) of the unigram distribution of `split`.

        It is the loss of the best model that ignores context, the baseline a language
        model must beat.

        Returns:
          The entropy, or None when the token cache is unavailable or the split has more than
          `max_tokens` tokens (not worth the start-up time).
        """
        info = corpus_info.read_corpus_info(self.data_dir) or {}
        if info.get("num_tokens", {}).get(split, 0) > max_tokens:
            return None
        try:
            tokens = load_token_stream(self.data_dir, split, verify=False)
        except Exception:  # noqa: BLE001 - a baseline is optional
            return None
        return unigram_entropy(tokens)

    def token_stream(self, split: str) -> np.ndarray:
        """int32 `[N]` token ids of `split` (checked against its recorded sha256)."""
        return load_token_stream(self.data_dir, split)

    def vocabulary(self) -> model_vocab.ModelVocab:
        """The directory's vocabulary and text rules (see `tf_records.vocab.model_vocab`)."""
        return model_vocab.load_model_vocab(self.data_dir)

    def copy_to(self, model_dir: str) -> None:
        """Copies vocab.txt and corpus-info.json into `model_dir`, atomically.

        The copy of corpus-info.json also records `data_dir` (absolute): where evaluation
        finds the data the model was trained on.
        """
        limits = {corpus_info.VOCAB_FILE: reading.MAX_VOCAB_BYTES,
                  corpus_info.CORPUS_INFO: reading.MAX_JSON_BYTES}
        for name, max_bytes in limits.items():
            source = os.path.join(self.data_dir, name)
            if os.path.lexists(source):
                with atomic.atomic_path(os.path.join(model_dir, name)) as tmp:
                    reading.copy_file(source, tmp, inside=self.data_dir, max_bytes=max_bytes,
                                      error=DataDirError)
        info = corpus_info.read_corpus_info(model_dir)
        if info is not None:
            info["data_dir"] = os.path.abspath(self.data_dir)
            atomic.write_json(os.path.join(model_dir, corpus_info.CORPUS_INFO), info)
