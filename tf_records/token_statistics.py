"""What the token ids of a corpus say before any model: the unigram baseline.

`unigram_entropy(tokens)` is the loss (nats/token) of the best model of these very tokens that
ignores context, the baseline a language model must beat; `split_unigram_entropy` is that of a
prepared split, read from its token cache.

Example:
  >>> round(unigram_entropy([0, 1, 0, 1]), 4)
  0.6931
"""
from typing import Optional

import numpy as np

from tf_records import corpus_info
from tf_records.records.stream_cache import load as load_token_stream


def unigram_entropy(tokens) -> Optional[float]:
    """Entropy (nats/token) of the frequencies of the ids in `tokens` (int [N]); None when
    empty. The loss of the best model of these very tokens that ignores context."""
    counts = np.bincount(np.asarray(tokens, np.int64).reshape(-1))
    if not counts.sum():
        return None
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def split_unigram_entropy(data_dir, split: str, max_tokens: int) -> Optional[float]:
    """`unigram_entropy` of the token cache of `split` in the prepared `data_dir`; None when
    the cache is unavailable or the split has more than `max_tokens` tokens (not worth the
    start-up time)."""
    info = corpus_info.read_corpus_info(data_dir) or {}
    if info.get("num_tokens", {}).get(split, 0) > max_tokens:
        return None
    try:
        tokens = load_token_stream(data_dir, split, verify=False)
    except Exception:  # noqa: BLE001 - a baseline is optional
        return None
    return unigram_entropy(tokens)
