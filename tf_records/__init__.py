"""tf_records: corpora, vocabularies and TFRecord pipelines for txl-tf.

This module is the façade; the work is done in concept folders:

- `vocab/`: vocabularies: `vocabulary` (`Vocabulary` and its file), `model_vocab` (the
  vocabulary files of a data or model directory), `choice` (the word vocabulary chosen from
  a corpus), `reference_pickle` and `export` (a released model's vocabulary read from its
  pickle, written as txl-tf files);
- `text/`: text and ids: `tokenize` (`TextRules`, encoding and decoding), `codec` (the text
  of a prepared data directory), `graph` (the rules as TensorFlow ops), `prompt` (a prompt
  and its continuation);
- `records/`: the TFRecords of a layout: `layout`, `streams` (the cut), `example_codec`,
  `writer`, `reader`, `metadata`, `stream_cache` (token caches) and `store` (finding or
  making a split's records);
- `corpora/`: the corpora;
- here: `prepare`, `prepared_data` (with `data_options`, `record_building`: finding and making
  a run's records, `token_statistics`: the unigram baseline), `corpus_info` (corpus-info.json),
  `download`, and what every folder shares: `errors`, `atomic` (file writes), `progress`, `vocab_checksum` (a
  vocabulary file's checksum).

Public API (see each module's docstring):

- `DataOptions`, `PreparedData(options or data_dir)`: a prepared data directory (its corpus,
  records found or made for a layout, input functions, unigram baseline, vocabulary);
  `unigram_entropy(tokens)`: the unigram baseline of any token ids.
- `RecordLayout(tgt_len, per_replica_batch, replicas_per_host=1, num_hosts=1, num_passes=1,
  last_segment="drop")`: how streams are laid out (`num_streams`, `per_host_batch`).
- `CORPORA` / `get_corpus(name, **options)`: enwik8, text8, wt103, wt2, ptb, lm1b, text,
  builtin, synthetic.
- `prepare(dataset, data_dir, RecordPlan({split: RecordLayout}, seed=0), raw_path=None,
  download=True, corpus_options={...}, **more_corpus_options) -> dict`.
- `find_records(data_dir, split, layout, vocab_size=None, verify="size") -> metadata dict`.
- `make_input_fn(data_dir, split, layout, repeat=True, start_step=0, vocab_size=None)
  -> input_fn(input_context) -> tf.data.Dataset` of `{"inputs", "labels"}`, int32 `[B, Q]`
  (B = per_replica_batch, Q = tgt_len).
- `dataset_from_tokens(tokens, per_replica_batch, tgt_len, ..., reading=TokenReading(host,
  repeat, start_step, pass_offsets))`: the same from memory.
- `Vocabulary`, `load_vocab(data_dir)`, `tokenize_text`, `detokenize`, `TextRules`.
- `load_token_stream(data_dir, split, verify=True)`: int32 `[N]` ids of a prepared split
  (the token cache `prepare` wrote).
- Errors: `DataError` and subclasses `CorpusError`, `DownloadError`, `VocabularyError`
  (`VocabularyImportError`, `UnsafePickleError`), `LayoutError`, `RecordsNotFoundError`,
  `RecordsMismatchError`, `RecordsCorruptError` (also damaged JSON files),
  `VocabularyMismatchError` (`vocab.txt` missing or not the one `corpus-info.json`
  describes), `DataDirError` (a file as data_dir, read-only, disk full).

TensorFlow is imported lazily (only by the writer and reader), so corpus and vocabulary work
does not pay for it. This package never imports `txl_tf` or `runners`.
"""
from tf_records.corpora import CORPORA, get_corpus
from tf_records.corpora.synthetic import Synthetic as SyntheticCorpus
from tf_records.corpus_info import read_corpus_info
from tf_records.errors import (CorpusError, DataDirError, DataError, DownloadError, LayoutError,
                               RecordsCorruptError, RecordsMismatchError, RecordsNotFoundError,
                               StorageError, UnsafePickleError, VocabularyError,
                               VocabularyImportError, VocabularyMismatchError)
from tf_records.prepare import prepare, recorded_corpus
from tf_records.data_options import DataOptions
from tf_records.prepared_data import PreparedData
from tf_records.records.layout import RecordLayout, RecordPlan
from tf_records.records.metadata import prepare_command
from tf_records.records.reader import TokenReading, dataset_from_tokens, make_input_fn
from tf_records.records.store import find_records
from tf_records.records.stream_cache import load as load_token_stream
from tf_records.text.codec import detokenize, tokenize_text
from tf_records.text.tokenize import TextRules
from tf_records.token_statistics import unigram_entropy
from tf_records.vocab.model_vocab import load_vocab
from tf_records.vocab.vocabulary import Vocabulary

__all__ = [
    "CORPORA", "CorpusError", "DataDirError", "DataError", "DataOptions", "DownloadError",
    "LayoutError", "PreparedData", "RecordLayout", "RecordPlan", "RecordsCorruptError",
    "RecordsMismatchError", "RecordsNotFoundError", "StorageError", "SyntheticCorpus", "TextRules",
    "TokenReading", "UnsafePickleError", "Vocabulary", "VocabularyError", "VocabularyImportError",
    "VocabularyMismatchError", "dataset_from_tokens", "detokenize", "find_records", "get_corpus",
    "load_token_stream", "load_vocab", "make_input_fn", "prepare", "prepare_command",
    "read_corpus_info", "recorded_corpus", "tokenize_text", "unigram_entropy",
]
