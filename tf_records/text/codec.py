"""Tokenizing arbitrary text with a prepared corpus's vocabulary and rules (evaluation, generation).

`tokenize_text(text, source)` and `detokenize(ids, source)` take `source` = a prepared
`data_dir` (path), or a corpus-info dict together with `vocab=`. They invert each other for
byte- and char-level corpora (byte level: except bytes the corpus drops, e.g. enwik8's newlines
by default). Word level: `detokenize` joins words with spaces and turns `<eos>` into line ends.
"""
import os

import numpy as np

from tf_records import corpus_info, data_dir_layout
from tf_records.errors import DataError
from tf_records.vocab.model_vocab import load_vocab
from tf_records.text.tokenize import TextRules, decode_ids, encode_text


def _resolve(source, vocab):
    if isinstance(source, (str, os.PathLike)):
        info = corpus_info.read_corpus_info(source)
        if info is None:
            raise DataError(f"{source} has no {data_dir_layout.CORPUS_INFO_FILE}; run "
                            "runners/prepare_data.py.")
        return info, vocab or load_vocab(source, info)
    if isinstance(source, dict):
        if vocab is None:
            raise DataError("pass vocab= together with a corpus-info dict.")
        return source, vocab
    raise DataError(f"source must be a data_dir or a corpus-info dict, got {type(source).__name__}.")


def tokenize_text(text, source, vocab=None, backend="python") -> np.ndarray:
    """Token ids of `text` (str, or bytes for byte level) with a corpus's rules.

    Args:
      text: the text.
      source: a prepared data directory, or a corpus-info dict (then with `vocab`).
      vocab: the `Vocabulary` (default: the data directory's).
      backend: word level: `python` or `tf_text` (identical ids).

    Returns:
      int32 `[n]` ids.
    """
    info, vocab = _resolve(source, vocab)
    return encode_text(text, TextRules.from_dict(info["text_rules"]), vocab, backend=backend)


def detokenize(ids, source, vocab=None, as_bytes=False):
    """The text of `ids` (str; bytes with `as_bytes`); `source`, `vocab` as in
    `tokenize_text`."""
    info, vocab = _resolve(source, vocab)
    return decode_ids(ids, TextRules.from_dict(info["text_rules"]), vocab, as_bytes=as_bytes)
