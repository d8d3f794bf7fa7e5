"""SavedModel export: in-graph tokenization, bad input, the attention variants, the compiled
generate signature. (Fresh processes that load the exports, with and without tensorflow_text,
and saved_model_cli: tests/serving/test_serving_loaders.py.)"""
import os

import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runners import export
from txl_tf.generation.generator import Generator
from tf_records.text.graph import GraphText
from tf_records.vocab.model_vocab import ModelVocab, write_model_vocab
from txl_tf.model.context_settings import ContextSettings
from txl_tf.serving.module import ServingModule
from txl_tf.serving.serving_settings import ServingSettings
from tf_records.text.tokenize import TextRules, decode_ids, encode_text
from tf_records.vocab.vocabulary import Vocabulary

from tiny import tiny_model
from word_export import MEM_LEN, N_TOKEN, RULES, vocabulary



def served_model(n_token, seed=0, **changes):
    """`tiny_model` of `n_token` tokens with one layer, tgt_len 4, init_std 0.5, and `changes`.
    One layer: the tests of this file check what the export writes and what its signatures
    give, not how layers stack (the memory of stacked layers through every loader:
    test_serving_loaders.py; in the compiled generation loop:
    tests/generation/test_compiled_generation.py::test_compiled_equals_graph_loop[1]); every
    layer adds to the tracing of every signature and to XLA's compilation."""
    return tiny_model(seed, **{"n_token": n_token, "n_layer": 1, "tgt_len": 4, "init_std": 0.5,
                               **changes})


WORD_TEXT = "The  cat\u00a0sat\r\non É mat.\n\n  a\tcat\u2003sat  \nthe end"


def vocab_cases(tmp_path):
    """(name, vocab, rules, text) for every level."""
    words = sorted({w for line in WORD_TEXT.lower().splitlines() for w in line.split()})
    chars = sorted(set(WORD_TEXT.lower()))
    return [
        ("byte", Vocabulary(list(range(255, -1, -1)), "byte"), TextRules("byte", drop_bytes=(10,)),
         "h\u00e9llo\nw\u00f6rld \u20ac\n"),
        ("char", Vocabulary(chars, "char"), TextRules("char", lower_case=True), WORD_TEXT),
        ("word", Vocabulary(["<eos>"] + words, "word", specials=["<eos>"]),
         TextRules("word", lower_case=True, eos="<eos>"), WORD_TEXT),
        ("lm1b", Vocabulary(["<S>"] + words, "word", specials=["<S>"]),
         TextRules("word", lower_case=True, double_eos="<S>"), WORD_TEXT),
    ]


@pytest.mark.parametrize("case", ["byte", "char", "word", "lm1b"])
def test_in_graph_tokenization_equals_tf_records(tmp_path, case):
    import tensorflow_text  # noqa: F401

    name, vocab, rules, text = [c for c in vocab_cases(tmp_path) if c[0] == case][0]
    write_model_vocab(str(tmp_path), vocab, rules)
    mv = ModelVocab(vocab, rules, {}, str(tmp_path / "vocab.txt"))
    codec = GraphText(mv)
    module = ServingModule(served_model(len(vocab)),
                           ServingSettings(ContextSettings(4, 6, -1, False), 8, 4),
                           vocab_file=mv.vocab_path, text_codec=codec)
    assert module.text_codec is codec and "score_text" in module.signatures()
    expected = encode_text(text, rules, vocab)
    got = codec.encode(tf.constant(text), continuing=False).numpy()
    np.testing.assert_array_equal(got, expected)
    rng = np.random.RandomState(0)
    for ids in [expected, rng.randint(0, len(vocab), size=40), np.zeros([0], np.int32)]:
        if case == "byte":
            ids = np.asarray(expected)  # random bytes need not be UTF-8
        decoded = codec.decode(tf.constant(ids, tf.int32)).numpy().decode("utf-8")
        assert decoded == decode_ids(ids, rules, vocab), (ids, decoded)
    # The signatures trace the codec as written, without autograph: no decision of its code at
    # this level may depend on a tensor's value (a prompt's encoding, continuing=True, holds
    # every op of the other).
    tf.function(lambda t: codec.encode(t, continuing=True), autograph=False,
                input_signature=[tf.TensorSpec([], tf.string)]).get_concrete_function()
    tf.function(codec.decode, autograph=False,
                input_signature=[tf.TensorSpec([None], tf.int32)]).get_concrete_function()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A model directory of the tiny word-level model of tests/support/word_export.py (its
    settings and vocabulary) with one layer (`served_model`), and the model."""
    model_dir = str(tmp_path_factory.mktemp("export") / "model")
    model = served_model(N_TOKEN, seed=3, mem_len=MEM_LEN)
    txl_tf.save_model(model, model_dir)
    write_model_vocab(model_dir, vocabulary(), RULES)
    return dict(model_dir=model_dir, model=model)


def test_export_bad_input(exported, tmp_path):
    (tmp_path / "ids" / "1").mkdir(parents=True)
    with pytest.raises(export.ExportInputError, match="exists"):
        export.run(export.ExportOptions(exported["model_dir"], str(tmp_path / "ids"),
                                        version=1, text_signatures=False))
    with pytest.raises(export.ExportInputError, match="does not exist"):
        export.run(export.ExportOptions(str(tmp_path / "missing"), str(tmp_path / "out")))
    bare = tmp_path / "bare"
    txl_tf.save_model(served_model(12), str(bare))
    with pytest.raises(export.ExportInputError, match="notext_signatures"):
        export.run(export.ExportOptions(str(bare), str(tmp_path / "out")))
    assert not os.path.exists(tmp_path / "out" / "1")


@pytest.mark.parametrize("attn_type", [1, 2, 3])
def test_every_attention_variant_exports_and_scores_as_the_model(tmp_path, attn_type):
    """The ablation's encodings (Shaw et al., vanilla, Al-Rfou et al.) export like attn_type 0:
    the loaded `score` signature gives the model's log-probabilities and memory."""
    model = served_model(12, seed=4, attn_type=attn_type)
    model_dir = str(tmp_path / "model")
    txl_tf.save_model(model, model_dir)
    result = export.run(export.ExportOptions(model_dir, str(tmp_path / "out"), mem_len=6,
                                             text_signatures=False, warmup_requests=0))
    score = tf.saved_model.load(result["export_path"]).signatures["score"]
    tokens = np.random.RandomState(attn_type).randint(0, 12, size=(2, 5)).astype(np.int32)
    mems = model.init_mems(2, 6)
    got = score(tokens=tf.constant(tokens), mems=tf.stack(mems, axis=1))
    want = model(tokens, mems=mems, mem_len=6)
    np.testing.assert_allclose(got["log_probs"], want["log_probs"], atol=1e-5)
    np.testing.assert_allclose(got["mems"], np.stack(want["mems"], axis=1), atol=1e-5)


def test_compiled_generate_signature_equals_the_graph_loop(exported, tmp_path):
    """--gen_jit_compile=true: the generate signature runs one XLA program (fixed memory, the
    prompt padded to its bucket) and gives, through TF Serving's session loader and TF2's
    loader, every row's tokens of the graph loop with that row's settings."""
    from saved_model_calls import SavedModelCalls
    model, model_dir = exported["model"], exported["model_dir"]
    out = export.run(export.ExportOptions(model_dir, str(tmp_path / "export"), clamp_len=5,
                                          text_signatures=False, gen_mem_len=10,
                                          gen_jit_compile="true", warmup_requests=0))
    assert out["gen_jit_compile"] is True
    with open(os.path.join(out["export_path"], "saved_model.pb"), "rb") as fh:
        assert b"_XlaMustCompile" in fh.read()
    rng = np.random.RandomState(4)
    prompt = rng.randint(0, 12, size=(3, 7)).astype(np.int32)
    feeds = dict(prompt=prompt, num_tokens=np.array([5, 9, 0], np.int32),
                 temperature=np.array([0.0, 1.2, 0.8], np.float32),
                 top_k=np.array([0, 6, 0], np.int32), top_p=np.array([1.0, 0.9, 1.0], np.float32),
                 seed=np.array([0, 5, 2], np.int64))
    gen = Generator(model, mem_len=10, clamp_len=5)
    wants = [gen.generate(prompt[b:b + 1], int(feeds["num_tokens"][b]), feeds["temperature"][b],
                          feeds["top_k"][b], feeds["top_p"][b], feeds["seed"][b])[0]
             for b in range(3)]
    for loader in ("session", "function"):
        tokens = SavedModelCalls(out["export_path"], loader)("generate", feeds)["tokens"]
        for b, want in enumerate(wants):
            n = feeds["num_tokens"][b]
            np.testing.assert_array_equal(tokens[b, :n], want, err_msg=f"{loader} row {b}")
            assert (tokens[b, n:] == -1).all()
    with pytest.raises(export.ExportInputError, match="--gen_jit_compile must be one of"):
        export.run(export.ExportOptions(model_dir, str(tmp_path / "bad"), gen_jit_compile="on"))
