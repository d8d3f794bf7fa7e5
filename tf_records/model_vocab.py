"""The vocabulary and text rules of a model directory, checked against the model.

A model directory made by training holds, beside `config.json` and the checkpoints,
`vocab.txt` (one symbol per line, line i is id i) and `corpus-info.json` (at least `level`:
byte / char / word, and the text rules of the corpus). Evaluation of raw text, generation and
export read them through `load_model_vocab`.
"""
import dataclasses
import json
import os
from typing import Optional

from tf_records.errors import VocabularyError
from tf_records.tokenize import TextRules
from tf_records.vocabulary import Vocabulary

VOCAB_FILE = "vocab.txt"
CORPUS_INFO_FILE = "corpus-info.json"


class ModelVocabError(ValueError):
    """A model directory whose vocabulary is missing or does not fit the model."""


@dataclasses.dataclass(frozen=True)
class ModelVocab:
    """What maps text to the model's ids: `vocab`, `rules` (a `TextRules`), the raw
    `corpus_info` dict and the path of the vocabulary file."""

    vocab: Vocabulary
    rules: TextRules
    corpus_info: dict
    vocab_path: str

    @property
    def level(self) -> str:
        return self.vocab.level


def _rules_from_info(info: dict) -> TextRules:
    for key in ("text_rules", "rules"):
        if isinstance(info.get(key), dict):
            return TextRules.from_dict(info[key])
    fields = {f.name for f in dataclasses.fields(TextRules)}
    return TextRules.from_dict({k: v for k, v in info.items() if k in fields})


def load_model_vocab(model_dir: str, n_token: Optional[int] = None,
                     vocab_file: Optional[str] = None) -> ModelVocab:
    """Reads `vocab.txt` and `corpus-info.json` of `model_dir` (or `vocab_file`, whose
    `corpus-info.json` must sit beside it) and checks that the vocabulary has `n_token` symbols.

    Raises:
      ModelVocabError: a file is missing or malformed, or the vocabulary size differs from the
        model's `n_token` (a vocabulary of another corpus).
    """
    vocab_path = vocab_file or os.path.join(model_dir, VOCAB_FILE)
    info_path = os.path.join(os.path.dirname(os.path.abspath(vocab_path)), CORPUS_INFO_FILE)
    if not os.path.isfile(vocab_path):
        raise ModelVocabError(
            f"{vocab_path} not found: the model directory has no vocabulary. Copy the data "
            f"directory's {VOCAB_FILE} and {CORPUS_INFO_FILE} into {model_dir} (training does "
            "this), or pass --vocab_file.")
    if not os.path.isfile(info_path):
        raise ModelVocabError(
            f"{info_path} not found: it tells the level (byte/char/word) and text rules of "
            f"{vocab_path}. Copy the data directory's {CORPUS_INFO_FILE} beside it.")
    try:
        with open(info_path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise ModelVocabError(f"{info_path} is not valid JSON ({error}).") from None
    if not isinstance(info, dict) or "level" not in info:
        raise ModelVocabError(f"{info_path} must be a JSON object with at least 'level' "
                              "(byte, char or word).")
    try:
        rules = _rules_from_info(info)
        unk = info.get("unk_symbol")
        vocab = Vocabulary.load(vocab_path, info["level"], specials=info.get("specials", ()),
                                unk_symbol=unk, unk_policy=info.get(
                                    "unk_policy", "unk" if unk is not None else "error"))
    except (VocabularyError, TypeError, ValueError) as error:
        raise ModelVocabError(f"cannot read the vocabulary of {model_dir}: {error}") from None
    if rules.level != vocab.level:
        raise ModelVocabError(f"{info_path}: text rules are {rules.level}-level but 'level' is "
                              f"{vocab.level}.")
    if n_token is not None and len(vocab) != n_token:
        raise ModelVocabError(
            f"vocabulary mismatch: {vocab_path} has {len(vocab)} symbols but the model has "
            f"n_token={n_token} (config.json). Use the vocabulary the model was trained with.")
    checksum = info.get("vocab_checksum")
    if checksum is not None and checksum != vocab.checksum():
        raise ModelVocabError(
            f"vocabulary mismatch: {vocab_path} has checksum {vocab.checksum()} but "
            f"{info_path} records {checksum}; the two files come from different corpora.")
    return ModelVocab(vocab, rules, info, os.path.abspath(vocab_path))


def write_model_vocab(model_dir: str, vocab: Vocabulary, rules: TextRules, **extra) -> None:
    """Writes `vocab.txt` and `corpus-info.json` into `model_dir` (used by tests and tools that
    build a model directory by hand)."""
    from txl_tf.model_dir import write_json_atomic

    os.makedirs(model_dir, exist_ok=True)
    vocab.save(os.path.join(model_dir, VOCAB_FILE))
    info = {"level": vocab.level, "text_rules": rules.to_dict(), "vocab_size": len(vocab),
            "vocab_checksum": vocab.checksum(), **extra}
    write_json_atomic(os.path.join(model_dir, CORPUS_INFO_FILE), info)
