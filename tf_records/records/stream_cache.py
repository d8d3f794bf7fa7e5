"""Encoded token streams cached as raw little-endian int32 files plus JSON (never pickle).

`data_dir/<split>.ids.bin` holds the ids; `data_dir/<split>.ids.json` holds `num_tokens`,
`dtype` (`<i4`), `sha256` and `vocab_checksum`. Other layouts are built from the cache
without re-tokenizing.
"""
import os

import numpy as np

from tf_records import atomic, data_dir_layout
from tf_records.errors import RecordsCorruptError
from tf_records.records.streams import tokens_sha256
from untrusted_files import reading
from untrusted_files import schema as s

# The JSON description of a split's token cache.
CACHE_SCHEMA = s.Obj({"num_tokens": s.Int(0, s.INT64_MAX // 4), "sha256": s.Str(max_len=64),
                      "vocab_checksum": s.Str(max_len=128), "split": s.Str(max_len=256)},
                     required=("num_tokens", "sha256", "vocab_checksum"))


def paths(data_dir, split):
    """(`<split>.ids.bin`, `<split>.ids.json`) of `data_dir` (`data_dir_layout`)."""
    return data_dir_layout.stream_cache_paths(data_dir, split)


def save(data_dir, split, tokens: np.ndarray, vocab_checksum: str) -> dict:
    """Writes the stream atomically and returns its JSON description."""
    bin_path, json_path = paths(data_dir, split)
    tokens = np.ascontiguousarray(tokens, "<i4")
    atomic.write_bytes(bin_path, memoryview(tokens).cast("B"))
    desc = {"split": split, "num_tokens": int(tokens.size), "dtype": "<i4",
            "sha256": tokens_sha256(tokens), "vocab_checksum": vocab_checksum}
    atomic.write_json(json_path, desc)
    return desc


def describe(data_dir, split):
    """The JSON description, or None if the cache is missing or its size is wrong."""
    bin_path, json_path = paths(data_dir, split)
    if not (os.path.exists(bin_path) and os.path.exists(json_path)):
        return None
    desc = atomic.read_json(json_path, schema=CACHE_SCHEMA)
    if os.path.getsize(bin_path) != 4 * desc["num_tokens"]:
        return None
    return desc


def load(data_dir, split, verify=True) -> np.ndarray:
    """The cached token stream of `split`.

    Args:
      data_dir: a prepared data directory.
      split: `train`, `valid` or `test`.
      verify: check the ids against the recorded sha256.

    Returns:
      int32 `[N]` ids.

    Raises:
      RecordsCorruptError: the cache is missing, truncated or fails its checksum.
    """
    desc = describe(data_dir, split)
    bin_path, _ = paths(data_dir, split)
    if desc is None:
        raise RecordsCorruptError(f"token cache {bin_path} is missing or truncated; rerun "
                                  "runners/prepare_data.py to rebuild it.")
    fd = reading.open_checked(bin_path, inside=data_dir, max_bytes=4 * desc["num_tokens"],
                              error=RecordsCorruptError, name=f"token cache {bin_path}")
    with os.fdopen(fd, "rb") as f:
        tokens = np.fromfile(f, "<i4").astype(np.int32, copy=False)
    if verify and tokens_sha256(tokens) != desc["sha256"]:
        raise RecordsCorruptError(f"token cache {bin_path} fails its sha256 checksum; delete it and "
                                  "rerun runners/prepare_data.py.")
    return tokens
