"""The names of a prepared data directory's files: their one owner in tf_records.

`runners/prepare_data.py` (`tf_records.prepare`) makes `data_dir`:

  vocab.txt                  VOCAB_FILE: the vocabulary, one symbol per line in id order
                             (vocab/vocabulary.py)
  corpus-info.json           CORPUS_INFO_FILE: dataset, level, options, vocab_size,
                             vocab_checksum, cutoffs, text rules, token counts per split
                             (corpus_info.py)
  <split>.ids.bin, .ids.json `stream_cache_paths`: the encoded stream of a split (int32 LE) and
                             its description (records/stream_cache.py)
  <basename>.host-<h>.tfrecords
                             `record_file`: the records of host h for one split and record
                             layout (records/metadata.py; the basename is `RecordLayout.basename`)
  record_info-<basename>.json
                             `info_file`: their description; `info_file_pattern` finds a
                             split's records of every layout
  raw/                       RAW_DIR: downloaded archives (corpora/)

The vocabulary pair also lands in a model directory: training copies vocab.txt and
corpus-info.json into it (`PreparedData.copy_to`, `model_vocab.write_model_files`) and the
importer writes its own (vocab/imported_files.py). The model directory's names are owned by
txl_tf (`txl_tf/storage/model_dir_layout.py`), which tf_records cannot import and which cannot
import tf_records; so both spell these two names, and tests/storage/test_model_dir_layout.py
fails when they differ.
"""
import os

VOCAB_FILE = "vocab.txt"
CORPUS_INFO_FILE = "corpus-info.json"
RAW_DIR = "raw"
STREAM_CACHE_SUFFIX = ".ids"
RECORD_INFO_PREFIX = "record_info-"


def record_file(basename: str, host: int) -> str:
    """`<basename>.host-<host>.tfrecords`: the name (relative to data_dir) of `host`'s records."""
    return f"{basename}.host-{host:03d}.tfrecords"


def info_file(basename: str) -> str:
    """`record_info-<basename>.json`: the name (relative to data_dir) of the records' metadata."""
    return f"{RECORD_INFO_PREFIX}{basename}.json"


def info_file_pattern(split: str) -> str:
    """The glob (relative to data_dir) of `split`'s record metadata of every layout."""
    return f"{RECORD_INFO_PREFIX}{split}.*.json"


def stream_cache_paths(data_dir: str, split: str) -> tuple:
    """(`data_dir/<split>.ids.bin`, `data_dir/<split>.ids.json`): a split's cached stream."""
    base = os.path.join(data_dir, f"{split}{STREAM_CACHE_SUFFIX}")
    return base + ".bin", base + ".json"
