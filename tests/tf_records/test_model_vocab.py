"""The vocabulary files of any directory: one reader for data and model directories."""
import json
import os

import pytest

import tf_records
from tf_records.vocab import model_vocab
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary

SYNTHETIC = {"train_tokens": 2_000, "eval_tokens": 400, "num_symbols": 16, "period": 24}


def test_a_data_directory_and_its_copy_read_the_same(tmp_path):
    tf_records.prepare("synthetic", tmp_path / "d", progress=False, **SYNTHETIC)
    strict = tf_records.load_vocab(tmp_path / "d")
    mv = model_vocab.load_model_vocab(str(tmp_path / "d"), n_token=len(strict))
    assert mv.vocab.symbols == strict.symbols and mv.vocab.checksum() == strict.checksum()
    assert mv.vocab.unk_policy == strict.unk_policy and mv.level == strict.level
    assert mv.rules == TextRules.from_dict(mv.corpus_info["text_rules"])
    with pytest.raises(model_vocab.ModelVocabError, match=r"n_token=99 \(config.json\)"):
        model_vocab.load_model_vocab(str(tmp_path / "d"), n_token=99)


def test_errors_are_vocabulary_errors_of_tf_records(tmp_path):
    assert issubclass(model_vocab.ModelVocabError, tf_records.VocabularyError)
    with pytest.raises(model_vocab.ModelVocabError, match="--vocab_file"):
        model_vocab.load_model_vocab(str(tmp_path))
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    with pytest.raises(model_vocab.ModelVocabError, match="corpus-info.json not found"):
        model_vocab.load_model_vocab(str(tmp_path))
    (tmp_path / "corpus-info.json").write_text("{")
    with pytest.raises(model_vocab.ModelVocabError, match="not valid JSON"):
        model_vocab.load_model_vocab(str(tmp_path))


def test_write_model_vocab_round_trips_atomically_with_the_umask(tmp_path):
    vocab = Vocabulary(["<eos>", "a", "b"], "word", specials=["<eos>"])
    rules = TextRules("word", eos="<eos>")
    old = os.umask(0o077)
    try:
        model_vocab.write_model_vocab(str(tmp_path / "m"), vocab, rules, dataset="x")
    finally:
        os.umask(old)
    assert sorted(os.listdir(tmp_path / "m")) == ["corpus-info.json", "vocab.txt"]
    assert (tmp_path / "m" / "corpus-info.json").stat().st_mode & 0o777 == 0o600
    assert json.loads((tmp_path / "m" / "corpus-info.json").read_text())["dataset"] == "x"
    mv = model_vocab.load_model_vocab(str(tmp_path / "m"), n_token=3)
    assert mv.vocab.symbols == vocab.symbols and mv.rules == rules
