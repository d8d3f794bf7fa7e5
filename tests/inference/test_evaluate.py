"""Evaluation: exact token-weighted metrics, stream cutting, long memory, the CLI, bad input."""
import json
import math
import os
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runners import evaluate
from txl_tf.model.context_settings import ContextSettings
from txl_tf.inference import evaluation
from tf_records import dataset_from_tokens
from tf_records.vocab.model_vocab import ModelVocabError, write_model_vocab
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary

from runner_calls import REPO, call_runner
from tiny import tiny_config, train_config



def small_config(**changes):
    """`tiny_config` with n_token 20, tgt_len 5 and init_std 0.3, and `changes`."""
    return tiny_config(**{"n_token": 20, "tgt_len": 5, "init_std": 0.3, **changes})


def flags_for(**kw):
    base = dict(model_dir=None, checkpoint=None, split="test", data_dir=None, text_file=None,
                vocab_file=None, tgt_len=None, mem_len=None, clamp_len=None, same_length=None,
                batch_size=2, last_segment="drop", max_steps=None, tb_dir="", progress=False)
    base.update(kw)
    return evaluate.EvalOptions(**base)


def word_model_dir(path, config, seed=0):
    keras.utils.set_random_seed(seed)
    model = txl_tf.TransformerXL(config)
    txl_tf.save_model(model, str(path))
    vocab = Vocabulary(["<eos>"] + [f"w{i}" for i in range(config.n_token - 1)], "word",
                       specials=["<eos>"])
    write_model_vocab(str(path), vocab, TextRules("word", eos="<eos>"))
    return model, vocab


def stream_batches(tokens, batch_size, tgt_len, last_segment="drop"):
    """(list of (inputs, labels) numpy batches, num_steps): tf_records' evaluation streams."""
    ds = dataset_from_tokens(tokens, batch_size, tgt_len, last_segment=last_segment)
    return [(b["inputs"], b["labels"]) for b in ds.as_numpy_iterator()], ds.num_steps


def naive_stream_nll(model, row, tgt_len, mem_len, clamp_len, same_length):
    """One stream, one segment at a time, NLL gathered from log_probs: (sum, count)."""
    mems = model.init_mems(1, mem_len)
    total, count = 0.0, 0
    for start in range(0, len(row) - 1, tgt_len):
        x = row[start:start + tgt_len]
        y = row[start + 1:start + tgt_len + 1]
        x = x[:len(y)]
        out = model(np.asarray(x, np.int32)[None], mems=mems, mem_len=mem_len,
                    clamp_len=clamp_len, same_length=same_length)
        log_probs = out["log_probs"][0].numpy().astype(np.float64)
        total -= sum(log_probs[i, t] for i, t in enumerate(y))
        count += len(y)
        if len(x) < tgt_len:  # the padded segment of the batched run: later keys are padding
            break
        mems = out["mems"]
    return total, count


@pytest.mark.parametrize("last_segment", ["drop", "pad"])
def test_evaluation_streams_score_every_token_of_the_layout(last_segment):
    """The evaluation data of a text is tf_records' cut (the one stream cutter): `drop` scores
    whole segments of every row, `pad` every token that has a predecessor in its row."""
    tokens = np.random.RandomState(0).randint(0, 50, size=103).astype(np.int32)
    batches, steps = stream_batches(tokens, 3, 7, last_segment)
    assert steps == len(batches)
    rows = len(tokens) // 3
    for x, y in batches:
        assert x.shape == y.shape == (3, 7)
        np.testing.assert_array_equal(x[:, 1:][y[:, :-1] >= 0], y[:, :-1][y[:, :-1] >= 0])
    counted = sum(int((y >= 0).sum()) for _, y in batches)
    expected = 103 - 3 if last_segment == "pad" else 3 * ((rows - 1) // 7) * 7
    assert counted == expected


@pytest.mark.parametrize("same_length,last_segment", [(False, "drop"), (True, "pad")])
def test_evaluator_equals_naive_per_stream_computation(same_length, last_segment):
    config = small_config()
    keras.utils.set_random_seed(1)
    model = txl_tf.TransformerXL(config)
    tokens = np.random.RandomState(2).randint(0, config.n_token, size=83).astype(np.int32)
    batch, tgt, mem, clamp = 3, 5, 9, 4
    batches, steps = stream_batches(tokens, batch, tgt, last_segment)
    settings = ContextSettings.of_config(model.config, mem_len=mem, clamp_len=clamp,
                                         same_length=same_length)
    result = evaluation.Evaluator(model, settings).evaluate(batches, batch, steps,
                                                            progress=False)
    total, count = 0.0, 0
    length = -(-len(tokens) // batch) if last_segment == "pad" else len(tokens) // batch
    for b in range(batch):
        row = tokens[b * length:(b + 1) * length]
        if last_segment == "drop":
            row = row[:((length - 1) // tgt) * tgt + 1]
        s, n = naive_stream_nll(model, row, tgt, mem, clamp, same_length)
        total += s
        count += n
    assert result.tokens == count
    np.testing.assert_allclose(result.loss, total / count, rtol=1e-5)
    np.testing.assert_allclose(result.bpc, total / count / math.log(2), rtol=1e-5)
    np.testing.assert_allclose(result.ppl, math.exp(total / count), rtol=1e-5)


def test_two_replicas_score_as_one_device():
    """The loop under MirroredStrategy (each replica its own streams and memory, sums reduced)
    gives the one-device result on the same streams (one layer: the replicas' split does not
    depend on the stacking of layers; stacked layers' memories: the naive comparison above)."""
    config = small_config(n_layer=1)
    keras.utils.set_random_seed(4)
    model = txl_tf.TransformerXL(config)
    tokens = np.random.RandomState(5).randint(0, config.n_token, size=203).astype(np.int32)
    one = dataset_from_tokens(tokens, 4, 5, last_segment="pad")
    mem_7 = ContextSettings.of_config(model.config, mem_len=7)
    single = evaluation.Evaluator(model, mem_7).evaluate(one, 4, one.num_steps,
                                                         progress=False)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        mirrored = txl_tf.TransformerXL(config)
        mirrored(tf.zeros([1, 5], tf.int32))
    mirrored.set_weights(model.get_weights())
    two = dataset_from_tokens(tokens, 2, 5, replicas_per_host=2, last_segment="pad")
    iterator = iter(strategy.distribute_datasets_from_function(lambda ctx: two))
    result = evaluation.Evaluator(mirrored, mem_7, strategy).run(iterator, 2)
    assert result.tokens == single.tokens == 203 - 4
    assert result.steps == single.steps == one.num_steps
    np.testing.assert_allclose(result.nll_sum, single.nll_sum, rtol=1e-5)


def test_loss_is_token_weighted_not_mean_of_batches():
    per_batch = [(10.0, 5), (1.0, 1)]  # (nll sum, tokens)
    result = evaluation.EvalResult(tokens=6, nll_sum=11.0, seconds=1.0)
    assert result.loss == pytest.approx(11.0 / 6)
    mean_of_ppl = np.mean([math.exp(s / n) for s, n in per_batch])
    assert result.ppl == pytest.approx(math.exp(11.0 / 6)) and result.ppl != mean_of_ppl


# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    """A tiny one-layer model trained with tgt_len 8 / mem_len 8 on the synthetic long-range
    corpus (period 12: only part of each segment sees the token 12 back), and its data_dir."""
    import tf_records
    from tf_records.records import stream_cache

    root = tmp_path_factory.mktemp("synthetic")
    data_dir, model_dir = str(root / "data"), str(root / "model")
    options = dict(num_symbols=16, period=12, repeats=3, train_tokens=40000, eval_tokens=3000)
    tf_records.prepare("synthetic", data_dir,
                       tf_records.RecordPlan(
                           {"valid": tf_records.RecordLayout(tgt_len=8, per_replica_batch=8)}),
                       progress=False, **options)
    train = stream_cache.load(data_dir, "train")
    keras.utils.set_random_seed(0)
    # One layer: its reach is its memory alone (two layers reach back twice as far), so the
    # short memory misses more of the period than the long one.
    config = train_config(n_layer=1, tgt_len=8, mem_len=8).for_data(16)
    model = txl_tf.TransformerXL(config)
    optimizer = keras.optimizers.Adam(3e-3)

    @tf.function(reduce_retracing=True)
    def step(x, y, mems):
        with tf.GradientTape() as tape:
            out = model(x, mems=list(mems), labels=y, training=True)
            loss = tf.reduce_mean(out["nll"])
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 0.25)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss, tuple(out["mems"])

    batches, n = stream_batches(train, 16, 8)
    for i in range(300):
        if i % n == 0:
            mems = tuple(model.init_mems(16))
        _, mems = step(*batches[i % n], mems)
    txl_tf.save_model(model, model_dir)
    for name in ("vocab.txt", "corpus-info.json"):
        with open(os.path.join(data_dir, name), "rb") as src, \
                open(os.path.join(model_dir, name), "wb") as dst:
            dst.write(src.read())
    return types.SimpleNamespace(data_dir=data_dir, model_dir=model_dir, model=model,
                                 valid=stream_cache.load(data_dir, "valid"), options=options)


def test_longer_eval_memory_lowers_loss_on_long_range_corpus(synthetic_run):
    run = synthetic_run
    short = evaluate.run(flags_for(model_dir=run.model_dir, data_dir=run.data_dir, split="valid",
                                   batch_size=8, mem_len=8))
    long = evaluate.run(flags_for(model_dir=run.model_dir, data_dir=run.data_dir, split="valid",
                                  batch_size=8, mem_len=32))
    unigram = math.log(16)
    best = unigram / 4
    # drop: the whole segments of 8 of every one of the 8 rows (a row's last token no input)
    assert short["tokens"] == long["tokens"] == 8 * ((len(run.valid) // 8 - 1) // 8 * 8)
    assert short["mem_len"] == 8 and long["mem_len"] == 32
    assert best < long["loss"] < short["loss"] - 0.3 < unigram, (short, long)
    # A model that learned: below the split's unigram entropy, no verdict.
    assert long["loss"] < long["unigram_entropy_nats"] and long["verdict"] is None
    # The records path equals the in-memory stream path on the same tokens.
    batches, steps = stream_batches(run.valid, 8, 8)
    mem_32 = ContextSettings.of_config(run.model.config, mem_len=32)
    again = evaluation.Evaluator(run.model, mem_32).evaluate(batches, 8, steps,
                                                             progress=False)
    assert again.tokens == long["tokens"]
    np.testing.assert_allclose(again.loss, long["loss"], rtol=1e-6)


def test_text_file_is_scored_with_the_model_vocabulary(synthetic_run, tmp_path):
    run = synthetic_run
    text = " ".join(f"s{i}" for i in run.valid[:400]) + "\n"
    path = tmp_path / "valid.txt"
    path.write_text(text)
    out = evaluate.run(flags_for(model_dir=run.model_dir, text_file=str(path), batch_size=1,
                                 last_segment="pad", mem_len=32))
    assert out["split"] == "text" and out["tokens"] == 399  # every token but the first
    batches, steps = stream_batches(run.valid[:400], 1, 8, "pad")
    mem_32 = ContextSettings.of_config(run.model.config, mem_len=32)
    direct = evaluation.Evaluator(run.model, mem_32).evaluate(batches, 1, steps,
                                                              progress=False)
    assert direct.tokens == 399
    np.testing.assert_allclose(out["loss"], direct.loss, rtol=1e-6)
    unknown = tmp_path / "bad.txt"
    unknown.write_text("s1 s2 zebra s3\n")
    from tf_records.errors import DataError
    with pytest.raises(DataError, match="zebra"):
        evaluate.run(flags_for(model_dir=run.model_dir, text_file=str(unknown), batch_size=1))


# ------------------------------------------------------------------------------------------
def test_bad_input_gives_clear_errors(tmp_path):
    config = small_config()
    model_dir = tmp_path / "model"
    word_model_dir(model_dir, config)
    text = tmp_path / "t.txt"
    text.write_text("w1 w2 w3 w4 w5 w6 w7 w8 w9 w1 w2 w3\n")
    # no checkpoint
    empty = tmp_path / "empty"
    txl_tf.save_config(config, str(empty))
    with pytest.raises(txl_tf.ModelDirError, match="no checkpoint"):
        evaluate.run(flags_for(model_dir=str(empty), text_file=str(text)))
    with pytest.raises(txl_tf.ModelDirError, match="not a txl-tf model directory"):
        evaluate.run(flags_for(model_dir=str(tmp_path / "nothing"), text_file=str(text)))
    # vocabulary of another size
    other = Vocabulary(["<eos>"] + [f"w{i}" for i in range(7)], "word", specials=["<eos>"])
    write_model_vocab(str(tmp_path / "v"), other, TextRules("word", eos="<eos>"))
    with pytest.raises(ModelVocabError, match="vocabulary mismatch.*n_token=20"):
        evaluate.run(flags_for(model_dir=str(model_dir), text_file=str(text),
                               vocab_file=str(tmp_path / "v" / "vocab.txt")))
    with pytest.raises(evaluate.EvalInputError, match="does not record the data it was "
                       "trained on; give --data_dir"):
        evaluate.run(flags_for(model_dir=str(model_dir)))
    with pytest.raises(evaluate.EvalInputError, match="not both"):
        evaluate.run(flags_for(model_dir=str(model_dir), text_file=str(text),
                               data_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="too few"):
        evaluate.run(flags_for(model_dir=str(model_dir), text_file=str(text), batch_size=4))


def run_cli(script, *args):
    """`runners/<script>` on `args` in this process (`call_runner`: its flags, its output and
    its exit code; the process boundary is tested in tests/runners/test_bad_inputs.py)."""
    return call_runner(script.removesuffix(".py"), list(args), cwd=REPO)


def test_cli_prints_json_line_and_writes_tensorboard(tmp_path):
    config = small_config(n_layer=1)  # the command line's flags and output: one layer is enough
    model_dir = tmp_path / "model"
    model, _ = word_model_dir(model_dir, config)
    text = tmp_path / "t.txt"
    words = [f"w{i}" for i in np.random.RandomState(3).randint(0, 19, size=60)]
    text.write_text(" ".join(words[:30]) + "\n" + " ".join(words[30:]) + "\n")
    proc = run_cli("evaluate.py", f"--model_dir={model_dir}", f"--text_file={text}",
                   "--batch_size=2", "--mem_len=12", "--clamp_len=7", "--same_length",
                   "--tgt_len=4", f"--tb_dir={tmp_path / 'tb'}")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in ("split", "tokens", "loss", "ppl", "unigram_entropy_nats", "unigram_ppl",
                "verdict", "tgt_len", "mem_len", "clamp_len", "same_length"):
        assert key in out
    assert "bpc" not in out  # a word model's loss is a perplexity, not bits per character
    assert (out["tgt_len"], out["mem_len"], out["clamp_len"], out["same_length"]) == \
        (4, 12, 7, True)
    assert "eval [" in proc.stderr  # progress bar
    ids = np.array([int(w[1:]) + 1 for w in words[:30]] + [0] + [int(w[1:]) + 1
                                                                  for w in words[30:]] + [0])
    batches, steps = stream_batches(ids, 2, 4)
    settings = ContextSettings.of_config(model.config, mem_len=12, clamp_len=7, same_length=True)
    expected = evaluation.Evaluator(model, settings).evaluate(
        batches, 2, steps, progress=False)
    assert out["tokens"] == expected.tokens
    np.testing.assert_allclose(out["loss"], expected.loss, rtol=1e-5)
    np.testing.assert_allclose(out["ppl"], math.exp(expected.loss), rtol=1e-5)
    # The verdict: this untrained model scores worse than the text's own word counts.
    counts = np.bincount(ids)
    p = counts[counts > 0] / len(ids)
    np.testing.assert_allclose(out["unigram_entropy_nats"], -(p * np.log(p)).sum(), rtol=1e-6)
    assert out["loss"] > out["unigram_entropy_nats"]
    assert out["verdict"].startswith("verdict: the model does not beat counting words: its "
                                     "text loss")
    assert out["verdict"] in proc.stderr.splitlines()
    assert any(name.startswith("events") for name in os.listdir(tmp_path / "tb"))
    bad = run_cli("evaluate.py", f"--model_dir={tmp_path / 'missing'}", f"--text_file={text}")
    assert bad.returncode == 2 and "not a txl-tf model directory" in bad.stderr
    unknown_flag = run_cli("evaluate.py", "--model_dir=x", "--no_such_flag=1")
    assert unknown_flag.returncode != 0 and "no_such_flag" in unknown_flag.stderr


@pytest.mark.parametrize("name,settings", [
    ("enwik8", (128, 3800, 1000, True, 16)), ("text8", (128, 3800, 1000, True, 16)),
    ("wt103", (128, 1600, 1000, True, 16)), ("lm1b", (32, 128, -1, True, 16))])
def test_eval_flagfiles_carry_the_paper_settings(name, settings):
    from absl import flags
    fv = flags.FlagValues()
    evaluate.define_flags(fv)
    fv(["evaluate.py", f"--flagfile={os.path.join(REPO, 'runners', f'eval_{name}.flags')}"])
    assert (fv.tgt_len, fv.mem_len, fv.clamp_len, fv.same_length, fv.batch_size) == settings
    assert fv.split == "test" and fv.data_dir == f"data/{name}"


def test_missing_eval_records_are_made_from_cached_tokens(synthetic_run):
    run = synthetic_run
    out = evaluate.run(flags_for(model_dir=run.model_dir, data_dir=run.data_dir, split="valid",
                                 batch_size=3, tgt_len=16, mem_len=16, last_segment="pad"))
    assert out["tokens"] == len(run.valid) - 3
    batches, steps = stream_batches(run.valid, 3, 16, "pad")
    mem_16 = ContextSettings.of_config(run.model.config, mem_len=16)
    direct = evaluation.Evaluator(run.model, mem_16).evaluate(batches, 3, steps,
                                                              progress=False)
    np.testing.assert_allclose(out["loss"], direct.loss, rtol=1e-6)


def test_vocabulary_mismatch_with_the_records_is_an_error(synthetic_run, tmp_path):
    run = synthetic_run
    # same size, other symbols: the checksums differ
    model_dir = tmp_path / "other"
    word_model_dir(model_dir, small_config(n_token=16))
    with pytest.raises(ModelVocabError, match="vocabulary mismatch.*records"):
        evaluate.run(flags_for(model_dir=str(model_dir), data_dir=run.data_dir, split="valid",
                               batch_size=8, tgt_len=8))
    # another size: the records refuse the model
    import tf_records
    small = tmp_path / "small"
    word_model_dir(small, small_config(n_token=12))
    with pytest.raises(tf_records.DataError, match="vocab_size"):
        evaluate.run(flags_for(model_dir=str(small), data_dir=run.data_dir, split="valid",
                               batch_size=8, tgt_len=8))
