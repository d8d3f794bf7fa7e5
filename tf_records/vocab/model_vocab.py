"""The vocabulary files of any directory: a prepared data directory or a model directory.

Both hold `vocab.txt` (one symbol per line, line i is id i) and `corpus-info.json` (at least
`level`: byte / char / word, the text rules of the corpus, the special symbols, the unknown
symbol policy and `vocab_checksum`). Training copies the data directory's pair into the model
directory. This module is the one reader (and writer) of the pair:

- `load_vocab(data_dir)`: the `Vocabulary` of a prepared data directory, whose
  corpus-info.json must be complete and whose vocab.txt must be the one it was prepared with
  (the errors name the `prepare_data.py` command that re-makes it);
- `load_model_vocab(model_dir, n_token)`: the vocabulary and text rules of any directory (a
  model directory, or a `vocab_file` with its corpus-info.json beside it), checked against the
  model's vocabulary size V = `n_token`; used by evaluation of raw text, generation and export.

Example:

```python
mv = load_model_vocab("runs/default", n_token=config.n_token)
ids = tf_records.text.tokenize.encode_text("some text", mv.rules, mv.vocab)
```
"""
import dataclasses
import os
from typing import Optional

from tf_records import atomic
from tf_records.corpus_info import MODEL_INFO_SCHEMA, check_vocab_file, read_corpus_info
from tf_records.data_dir_layout import CORPUS_INFO_FILE, VOCAB_FILE
from tf_records.errors import DataError, VocabularyError
from tf_records.vocab.text_rules import TextRules
from tf_records.vocab.vocabulary import Vocabulary
from untrusted_files.schema import INFO_FIELDS_SCHEMA


class ModelVocabError(VocabularyError):
    """A directory whose vocabulary is missing, malformed or does not fit the model."""


@dataclasses.dataclass(frozen=True)
class ModelVocab:
    """What maps text to a model's ids.

    Attributes:
      vocab: the `Vocabulary` (V symbols).
      rules: the `TextRules` of the corpus.
      corpus_info: the corpus-info.json dict.
      vocab_path: the absolute path of the vocabulary file.
    """

    vocab: Vocabulary
    rules: TextRules
    corpus_info: dict
    vocab_path: str

    @property
    def level(self) -> str:
        return self.vocab.level


def vocabulary_from_info(path: str, info: dict) -> Vocabulary:
    """Reads the vocabulary file `path` as `info` (a corpus-info dict) describes it.

    Args:
      path: a vocab.txt.
      info: its corpus-info dict: `level`, and optionally `specials`, `unk_symbol` and
        `unk_policy` (default `unk` when an `unk_symbol` is recorded, else `error`).

    Returns:
      The `Vocabulary`.

    Raises:
      VocabularyError: the file is missing or malformed.
    """
    unk = info.get("unk_symbol")
    return Vocabulary.load(path, info["level"], specials=info.get("specials") or (),
                           unk_symbol=unk,
                           unk_policy=info.get("unk_policy", "unk" if unk is not None else "error"))


def rules_from_info(info: dict) -> TextRules:
    """The `TextRules` a corpus-info dict records (`text_rules`, or top-level fields)."""
    for key in ("text_rules", "rules"):
        if isinstance(info.get(key), dict):
            return TextRules.from_dict(info[key])
    fields = {f.name for f in dataclasses.fields(TextRules)}
    return TextRules.from_dict({k: v for k, v in info.items() if k in fields})


def load_vocab(data_dir, corpus_info: Optional[dict] = None) -> Vocabulary:
    """The vocabulary of a prepared `data_dir` (with its specials and unknown-symbol policy).

    Args:
      data_dir: a directory `tf_records.prepare` wrote.
      corpus_info: its corpus-info dict, when already read.

    Returns:
      The `Vocabulary`.

    Raises:
      DataError: `data_dir` has no corpus-info.json.
      VocabularyMismatchError: vocab.txt is missing or not the one corpus-info.json describes.
      RecordsCorruptError: corpus-info.json is damaged.
    """
    info = corpus_info or read_corpus_info(data_dir)
    if info is None:
        raise DataError(f"{data_dir} has no {CORPUS_INFO_FILE}; run runners/prepare_data.py "
                        "first.")
    check_vocab_file(data_dir, info)
    return vocabulary_from_info(os.path.join(data_dir, VOCAB_FILE), info)


def read_model_info(info_path: str, fix: str, schema=MODEL_INFO_SCHEMA) -> dict:
    """The corpus-info.json of any directory (a data or model directory, a preset), read as a
    file from elsewhere (inside its directory, bounded, UTF-8, nesting bounded) and checked
    against `MODEL_INFO_SCHEMA`.

    Raises:
      ModelVocabError: the file cannot be read as such, or does not fit the schema.
      FileNotFoundError: it does not exist.
    """
    return atomic.read_json(info_path, fix=fix, schema=schema)


def _read_info(info_path: str, vocab_path: str, schema=MODEL_INFO_SCHEMA) -> dict:
    if not os.path.lexists(info_path):
        raise ModelVocabError(
            f"{info_path} not found: it tells the level (byte/char/word) and text rules of "
            f"{vocab_path}. Copy the data directory's {CORPUS_INFO_FILE} beside it.")
    try:
        return read_model_info(info_path, f"copy the data directory's {CORPUS_INFO_FILE} "
                                          "beside it", schema)
    except (DataError, OSError) as error:
        raise ModelVocabError(str(error) if isinstance(error, DataError) else
                              f"{info_path} cannot be read ({error.strerror}).") from None


def _check_fits(vocab: Vocabulary, info: dict, vocab_path: str, info_path: str,
                n_token: Optional[int]) -> None:
    if n_token is not None and len(vocab) != n_token:
        raise ModelVocabError(
            f"vocabulary mismatch: {vocab_path} has {len(vocab)} symbols but the model has "
            f"n_token={n_token} (config.json). Use the vocabulary the model was trained with.")
    checksum = info.get("vocab_checksum")
    if checksum is not None and checksum != vocab.checksum():
        raise ModelVocabError(
            f"vocabulary mismatch: {vocab_path} has checksum {vocab.checksum()} but "
            f"{info_path} records {checksum}; the two files come from different corpora.")


def load_model_vocab(model_dir: str, n_token: Optional[int] = None,
                     vocab_file: Optional[str] = None) -> ModelVocab:
    """Reads vocab.txt and corpus-info.json of any directory, checked against a model.

    Args:
      model_dir: a model (or prepared data) directory.
      n_token: the model's vocabulary size V; None: not checked.
      vocab_file: a vocabulary file to read instead of `model_dir/vocab.txt`; its
        corpus-info.json must sit beside it.

    Returns:
      The `ModelVocab`.

    Raises:
      ModelVocabError: a file is missing or malformed, or the vocabulary size differs from
        `n_token` (a vocabulary of another corpus).
    """
    vocab_path = vocab_file or os.path.join(model_dir, VOCAB_FILE)
    info_path = os.path.join(os.path.dirname(os.path.abspath(vocab_path)), CORPUS_INFO_FILE)
    if not os.path.lexists(vocab_path):
        raise ModelVocabError(
            f"{vocab_path} not found: the model directory has no vocabulary. Copy the data "
            f"directory's {VOCAB_FILE} and {CORPUS_INFO_FILE} into {model_dir} (training does "
            "this), or pass --vocab_file.")
    info = _read_info(info_path, vocab_path)
    try:
        rules = rules_from_info(info)
        vocab = vocabulary_from_info(vocab_path, info)
    except (VocabularyError, TypeError, ValueError) as error:
        raise ModelVocabError(f"cannot read the vocabulary of {model_dir}: {error}") from None
    if rules.level != vocab.level:
        raise ModelVocabError(f"{info_path}: text rules are {rules.level}-level but 'level' is "
                              f"{vocab.level}.")
    _check_fits(vocab, info, vocab_path, info_path, n_token)
    if vocab_file:
        check_model_checksum(model_dir, vocab.checksum(), f"--vocab_file={vocab_file}")
    return ModelVocab(vocab, rules, info, os.path.abspath(vocab_path))


def recorded_checksum(directory: Optional[str]) -> Optional[str]:
    """The `vocab_checksum` that `directory`'s corpus-info.json records, or None when it has
    none (no file, or no field).

    Raises:
      ModelVocabError: the file exists but cannot be read as a corpus-info.json (a link out,
        too large, not JSON, a field of the wrong type).
    """
    info_path = os.path.join(directory or "", CORPUS_INFO_FILE)
    if not directory or not os.path.lexists(info_path):
        return None
    return _read_info(info_path, os.path.join(directory, VOCAB_FILE),
                      INFO_FIELDS_SCHEMA).get("vocab_checksum")


def check_model_checksum(model_dir: Optional[str], checksum: str, what: str) -> None:
    """Raises `ModelVocabError` when `model_dir` records (in its corpus-info.json) the checksum
    of the vocabulary its model was trained with and `checksum`, that of the vocabulary given
    for it (`what`), differs: a vocabulary of the same size from another corpus would read
    every id as another symbol."""
    recorded = recorded_checksum(model_dir)
    info_path = os.path.join(model_dir or "", CORPUS_INFO_FILE)
    if recorded is not None and recorded != checksum:
        raise ModelVocabError(
            f"vocabulary mismatch: {what} has checksum {checksum} but the model in {model_dir} "
            f"was trained with {recorded} ({info_path}); use the vocabulary it was trained "
            "with.")


def write_model_vocab(directory: str, vocab: Vocabulary, rules: TextRules, **extra) -> None:
    """Writes vocab.txt and corpus-info.json into `directory`, atomically.

    Args:
      directory: created when missing.
      vocab: the vocabulary.
      rules: its text rules.
      **extra: more corpus-info.json fields.
    """
    atomic.ensure_dir(directory, "directory")
    vocab.save(os.path.join(directory, VOCAB_FILE))
    info = {"level": vocab.level, "text_rules": rules.to_dict(), "vocab_size": len(vocab),
            "vocab_checksum": vocab.checksum(), **extra}
    atomic.write_json(os.path.join(directory, CORPUS_INFO_FILE), info)
