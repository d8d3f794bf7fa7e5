"""SavedModel export: in-graph tokenization, fresh-process loading, saved_model_cli, bad input."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runners import export
from tf_records import dataset_from_tokens
from txl_tf.inference import evaluation
from txl_tf.generation.generator import Generator
from tf_records.text.graph import GraphText
from tf_records.vocab.model_vocab import ModelVocab, write_model_vocab
from txl_tf.model.context_settings import ContextSettings
from txl_tf.serving.module import ServingModule
from txl_tf.serving.serving_settings import ServingSettings
from tf_records.text.tokenize import TextRules, decode_ids, encode_text
from tf_records.vocab.vocabulary import Vocabulary

from tiny import tiny_model
from word_export import vocabulary, word_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def served_model(n_token, seed=0, **changes):
    """`tiny_model` of `n_token` tokens with tgt_len 4, init_std 0.5, and `changes`."""
    return tiny_model(seed, **{"n_token": n_token, "tgt_len": 4, "init_std": 0.5, **changes})


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


# ------------------------------------------------------------------------------------------
SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    path, text_mode = sys.argv[1], sys.argv[2] == "text"
    if text_mode:
        import tensorflow_text  # noqa: F401
    loaded = tf.saved_model.load(path)
    assert ("tensorflow_text" in sys.modules) == text_mode
    sig = loaded.signatures
    inp = dict(np.load(sys.argv[3]))
    out = {"signatures": sorted(sig.keys())}
    mems = sig["init_mems"](streams=tf.zeros([2], tf.int32))["mems"]
    out["init_mems_shape"] = mems.shape.as_list()
    r = sig["score"](tokens=tf.constant(inp["tokens"]), mems=mems)
    r2 = sig["score"](tokens=tf.constant(inp["tokens2"]), mems=r["mems"])
    d = sig["serving_default"](tokens=tf.constant(inp["tokens"]), mems=mems)
    out["default_equals_score"] = bool(np.array_equal(d["log_probs"], r["log_probs"]))
    n = sig["nll"](tokens=tf.constant(inp["tokens"]), labels=tf.constant(inp["labels"]),
                   mems=mems)

    def rows(batch, num_tokens, temperature, top_k, top_p, seed):
        return dict(num_tokens=tf.fill([batch], num_tokens),
                    temperature=tf.fill([batch], temperature), top_k=tf.fill([batch], top_k),
                    top_p=tf.fill([batch], top_p),
                    seed=tf.fill([batch], tf.constant(seed, tf.int64)))

    g = sig["generate"](prompt=tf.constant(inp["prompt"]), **rows(2, 9, 0.0, 0, 1.0, 0))
    s = sig["generate"](prompt=tf.constant(inp["prompt"]), **rows(2, 9, 1.2, 6, 0.9, 5))
    arrays = dict(log_probs=r["log_probs"], mems=r["mems"], log_probs2=r2["log_probs"],
                  mems2=r2["mems"], nll=n["nll"], nll_mems=n["mems"], greedy=g["tokens"][:, :9],
                  sampled=s["tokens"][:, :9], lengths=g["lengths"])
    errors = {}
    try:
        sig["score"](tokens=tf.constant(inp["tokens"]), mems=tf.zeros([3, 2, 6, 16]))
    except tf.errors.InvalidArgumentError as e:
        errors["mems"] = e.message
    try:
        sig["generate"](prompt=tf.constant([[1, 99]]), **rows(1, 2, 0.0, 0, 1.0, 0))
    except tf.errors.InvalidArgumentError as e:
        errors["prompt"] = e.message
    if text_mode:
        t = sig["generate_text"](text=tf.constant(["w1 w2\\nw3", "w4 w5 w6 w7 w8 w9 w1"]),
                                 **rows(2, 7, 0.0, 0, 1.0, 0))
        out["generate_text"] = [x.decode() for x in t["text"].numpy()]
        out["prompt_tokens"] = t["prompt_tokens"].numpy().tolist()
        st = sig["score_text"](text=tf.constant([inp["score_text"].item()]))
        out["score_text"] = {k: v.numpy().tolist() for k, v in st.items()}
        try:
            sig["generate_text"](text=tf.constant(["w1 zebra"]), **rows(1, 2, 0.0, 0, 1.0, 0))
        except tf.errors.InvalidArgumentError as e:
            errors["unknown"] = e.message
        out["asset"] = open(loaded.vocab_file.asset_path.numpy().decode()).read()
    out["errors"] = errors
    np.savez(sys.argv[4], **{k: np.asarray(v) for k, v in arrays.items()})
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def exported(word_export, tmp_path_factory):
    """The shared tiny word-level model directory and its two exports (tests/support/
    word_export.py): "full" with every signature, "ids" without the text ones; and a directory
    of this module's own files."""
    return dict(root=tmp_path_factory.mktemp("export"), model_dir=word_export["model"],
                model=word_model(), vocab=vocabulary(), full=word_export["full"],
                ids=word_export["ids"])


def run_loaded(exported, which):
    root = exported["root"]
    rng = np.random.RandomState(0)
    inputs = dict(tokens=rng.randint(0, 12, size=(2, 5)).astype(np.int32),
                  tokens2=rng.randint(0, 12, size=(2, 3)).astype(np.int32),
                  labels=rng.randint(0, 12, size=(2, 5)).astype(np.int32),
                  prompt=rng.randint(0, 12, size=(2, 7)).astype(np.int32),
                  score_text=np.array("w1 w2 w3 w4 w5\nw6 w7 w8 w9 w10 w1 w2\nw3\n"))
    np.savez(root / "inputs.npz", **inputs)
    script = root / "load.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, str(script), exported[which],
         "text" if which == "full" else "ids", str(root / "inputs.npz"),
         str(root / f"out-{which}.npz")], capture_output=True, text=True, env=env,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return inputs, json.loads(proc.stdout.strip().splitlines()[-1]), dict(
        np.load(root / f"out-{which}.npz"))


def check_id_signatures(exported, inputs, arrays):
    model = exported["model"]
    kw = dict(mem_len=6, clamp_len=5, same_length=True)
    first = model(inputs["tokens"], mems=model.init_mems(2, 6), **kw)
    second = model(inputs["tokens2"], mems=first["mems"], **kw)
    np.testing.assert_allclose(arrays["log_probs"], first["log_probs"], atol=1e-5)
    np.testing.assert_allclose(arrays["mems"], np.stack(first["mems"], axis=1), atol=1e-5)
    np.testing.assert_allclose(arrays["log_probs2"], second["log_probs"], atol=1e-5)
    np.testing.assert_allclose(arrays["mems2"], np.stack(second["mems"], axis=1), atol=1e-5)
    nll = model(inputs["tokens"], mems=model.init_mems(2, 6), labels=inputs["labels"], **kw)
    np.testing.assert_allclose(arrays["nll"], nll["nll"], atol=1e-5)
    np.testing.assert_allclose(arrays["nll_mems"], np.stack(nll["mems"], axis=1), atol=1e-5)
    assert arrays["lengths"].tolist() == [9, 9]
    gen = Generator(model, mem_len=40, clamp_len=5)
    np.testing.assert_array_equal(arrays["greedy"], gen.generate(inputs["prompt"], 9, 0.0))
    np.testing.assert_array_equal(arrays["sampled"],
                                  gen.generate(inputs["prompt"], 9, 1.2, 6, 0.9, 5))


def test_id_signatures_load_with_tensorflow_alone(exported):
    inputs, out, arrays = run_loaded(exported, "ids")
    assert out["signatures"] == ["generate", "init_mems", "nll", "score", "serving_default"]
    assert out["init_mems_shape"] == [2, 2, 6, 16] and out["default_equals_score"]
    check_id_signatures(exported, inputs, arrays)
    assert "mems must be float32 [batch (that of tokens), n_layer=2" in out["errors"]["mems"]
    assert "prompt must be token ids < 12, the vocabulary size" in out["errors"]["prompt"]


def test_full_export_runs_every_signature_with_tensorflow_text(exported):
    inputs, out, arrays = run_loaded(exported, "full")
    assert out["signatures"] == ["generate", "generate_text", "init_mems", "nll", "score",
                                 "score_text", "serving_default"]
    check_id_signatures(exported, inputs, arrays)
    model, vocab = exported["model"], exported["vocab"]
    rules = TextRules("word", eos="<eos>")
    gen = Generator(model, mem_len=40, clamp_len=5)
    for prompt, text, count in zip(["w1 w2\nw3", "w4 w5 w6 w7 w8 w9 w1"],
                                   out["generate_text"], out["prompt_tokens"]):
        ids = encode_text(prompt, rules, vocab)[:-1]  # the last line goes on: no <eos>
        assert count == len(ids)
        new = gen.generate(ids[None], 7, 0.0)[0]
        full = decode_ids(np.concatenate([ids, new]), rules, vocab)
        assert text == full[len(decode_ids(ids, rules, vocab)):]
    ids = encode_text(str(inputs["score_text"]), rules, vocab)
    batches = dataset_from_tokens(ids, 1, 4, last_segment="pad")
    settings = ContextSettings.of_config(model.config, mem_len=6, clamp_len=5, same_length=True)
    expected = evaluation.Evaluator(model, settings).evaluate(
        batches, 1, batches.num_steps, progress=False)
    assert out["score_text"]["tokens"] == [expected.tokens] == [len(ids) - 1]
    np.testing.assert_allclose(out["score_text"]["loss"], [expected.loss], rtol=1e-5)
    assert "zebra" in out["errors"]["unknown"]
    assert out["asset"] == vocab.to_text()


def test_saved_model_cli_lists_every_signature(exported):
    for which, names in [("ids", ()), ("full", ("generate_text", "score_text"))]:
        proc = subprocess.run([os.path.join(BIN, "saved_model_cli"), "show", "--all", "--dir",
                               exported[which]], capture_output=True, text=True,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for name in ("serving_default", "score", "nll", "init_mems", "generate") + names:
            assert f"signature_def['{name}']" in proc.stdout
        assert "shape: (-1, 2, -1, 16)" in proc.stdout  # mems: static n_layer and d_model
        assert ("generate_text" in proc.stdout) == bool(names)


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
                                             text_signatures=False))
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
    for loader in ("session", "function"):
        tokens = SavedModelCalls(out["export_path"], loader)("generate", feeds)["tokens"]
        for b in range(3):
            n = feeds["num_tokens"][b]
            want = gen.generate(prompt[b:b + 1], int(n), feeds["temperature"][b],
                                feeds["top_k"][b], feeds["top_p"][b], feeds["seed"][b])[0]
            np.testing.assert_array_equal(tokens[b, :n], want, err_msg=f"{loader} row {b}")
            assert (tokens[b, n:] == -1).all()
    with pytest.raises(export.ExportInputError, match="--gen_jit_compile must be one of"):
        export.run(export.ExportOptions(model_dir, str(tmp_path / "bad"), gen_jit_compile="on"))
