"""A prepared data directory: its corpus, its records for a layout, its input pipelines.

`PreparedData` is the one object the training and evaluation libraries use for "the data":
it reuses the dataset and corpus options `data_dir/corpus-info.json` records (given options
override them), finds the records a run's layouts need and makes the missing ones (from the
token cache, the raw data or the corpus downloaded on first use), builds input functions,
and copies the vocabulary files into a model directory. Its options are `DataOptions`
(`data_options.py`); finding and making records, waiting for the chief included, is
`record_building.py`; the unigram baseline is `token_statistics.py`.

Example:

```python
data = tf_records.PreparedData(tf_records.DataOptions(data_dir="data/builtin"))
layouts = {"train": data.layout(tgt_len=64, per_replica_batch=8)}
data.ensure_records(layouts)
dataset = data.input_fn("train", layouts["train"], repeat=True)(None)
```
"""
import os
from typing import Callable, Optional, Union

import numpy as np

from tf_records import atomic, corpus_info, data_dir_layout, record_building
from tf_records.data_options import DataOptions, resolve
from tf_records.errors import DataDirError
from tf_records.prepare import prepare
from tf_records.records import store
from tf_records.records.layout import RecordLayout, RecordPlan
from tf_records.records.reader import records_input_fn
from tf_records.records.stream_cache import load as load_token_stream
from tf_records.token_statistics import split_unigram_entropy
from tf_records.vocab import model_vocab
from untrusted_files import reading


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
        self.options = resolve(options)
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
        return prepare(o.dataset, self.data_dir, RecordPlan(layouts or {}, seed),
                       raw_path=o.raw_path, download=o.download, progress=progress,
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
        metas = record_building.ensure_records(self.options, layouts, may_prepare,
                                               wait_seconds, vocab_size)
        self._metas.update(metas)
        self._found.update({(split, layouts[split]): meta for split, meta in metas.items()})
        return metas

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
            except record_building.MISSING_RECORDS as error:
                if not make_from_cache:
                    raise
                meta = record_building.make_from_cache(self.data_dir, split, layout, vocab_size,
                                                       error, progress)
            self._found[(split, layout)] = meta
        return records_input_fn(self.data_dir, split, layout, meta, repeat=repeat,
                                start_step=start_step, verify=verify)

    def unigram_entropy(self, split: str = "train",
                        max_tokens: int = 50_000_000) -> Optional[float]:
        """Entropy (nats/token) of the unigram distribution of `split`.

        It is the loss of the best model that ignores context, the baseline a language
        model must beat.

        Returns:
          The entropy, or None when the token cache is unavailable or the split has more than
          `max_tokens` tokens (not worth the start-up time).
        """
        return split_unigram_entropy(self.data_dir, split, max_tokens)

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
        limits = {data_dir_layout.VOCAB_FILE: reading.MAX_VOCAB_BYTES,
                  data_dir_layout.CORPUS_INFO_FILE: reading.MAX_JSON_BYTES}
        for name, max_bytes in limits.items():
            source = os.path.join(self.data_dir, name)
            if os.path.lexists(source):
                with atomic.atomic_path(os.path.join(model_dir, name)) as tmp:
                    reading.copy_file(source, tmp, inside=self.data_dir, max_bytes=max_bytes,
                                      error=DataDirError)
        info = corpus_info.read_corpus_info(model_dir)
        if info is not None:
            info["data_dir"] = os.path.abspath(self.data_dir)
            atomic.write_json(os.path.join(model_dir, data_dir_layout.CORPUS_INFO_FILE), info)
