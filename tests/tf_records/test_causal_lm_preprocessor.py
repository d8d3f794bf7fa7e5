"""`tf_records.causal_lm_preprocessor.CausalLMPreprocessor`: the text rules of generate.py
(`PromptText`) for every level, serialized by Keras (its config names its module) with the
vocabulary as text beside it, and one clear error for a missing vocabulary or a non-text prompt."""
import json
import os

import keras
import numpy as np
import pytest

from causal_lm_support import vocabulary
from tf_records.causal_lm_preprocessor import CausalLMPreprocessor, PreprocessorError
from tf_records.vocab.model_vocab import load_model_vocab, write_model_vocab
from tf_records.text.prompt import PromptText

TEXTS = {"word": "w1 w2 zz\nw3 w4\n", "char": "ab é\ncz", "byte": "héllo\n\x00"}


def vocab_dir(tmp_path, level):
    vocab, rules = vocabulary(level)
    write_model_vocab(str(tmp_path), vocab, rules, dataset="tiny", specials=vocab.specials,
                      unk_symbol=vocab.unk_symbol, unk_policy=vocab.unk_policy)
    return str(tmp_path)


@pytest.mark.parametrize("level", ["word", "char", "byte"])
def test_text_rules_are_those_of_generate_py(tmp_path, level):
    directory = vocab_dir(tmp_path, level)
    pre = CausalLMPreprocessor(directory)
    reference = PromptText(load_model_vocab(directory))
    text = TEXTS[level]
    ids = pre.tokenize(text)
    np.testing.assert_array_equal(ids, reference.encode(text))
    assert ids.dtype == np.int32 and pre.level == level
    assert pre.unknown_symbols(text) == reference.unknown_symbols(text)
    generated = np.arange(3, 10)
    streamer = reference.streamer(ids)
    expected = "".join(streamer.push(int(t)) for t in generated) + streamer.finish()
    assert pre.continuation(ids, generated) == expected
    if level == "word":
        assert pre.detokenize(ids) == "w1 w2 <unk>\nw3 w4\n"


@pytest.mark.parametrize("level", ["word", "char", "byte"])
def test_keras_serialization_with_the_vocabulary_as_assets(tmp_path, level):
    pre = CausalLMPreprocessor(vocab_dir(tmp_path / "src", level), name="pre")
    spec = json.loads(json.dumps(keras.saving.serialize_keras_object(pre)))
    assert spec["module"] == "tf_records.causal_lm_preprocessor"
    assert "vocab" not in json.dumps(spec["config"])  # an asset, not config
    pre.save_assets(str(tmp_path / "assets"))
    assert sorted(os.listdir(tmp_path / "assets")) == ["corpus-info.json", "vocab.txt"]
    again = keras.saving.deserialize_keras_object(spec)
    again.load_assets(str(tmp_path / "assets"))
    assert again.name == "pre" and again.corpus_info == pre.corpus_info
    np.testing.assert_array_equal(again.tokenize(TEXTS[level]), pre.tokenize(TEXTS[level]))
    assert again.vocabulary_size == pre.vocabulary_size


def test_bad_inputs_give_one_clear_error(tmp_path):
    empty = CausalLMPreprocessor()
    with pytest.raises(PreprocessorError, match="has no vocabulary yet"):
        empty.tokenize("abc")
    pre = CausalLMPreprocessor(vocab_dir(tmp_path, "byte"))
    with pytest.raises(PreprocessorError, match="tokenize takes a str, got int"):
        pre.tokenize(3)
    with pytest.raises(ValueError, match="not found"):
        CausalLMPreprocessor(str(tmp_path / "missing"))
