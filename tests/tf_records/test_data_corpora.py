"""Every corpus format on tiny local samples (archives made here), compared with naive readings."""
import collections
import io
import json
import math
import os
import tarfile
import zipfile

import numpy as np
import pytest

import tf_records
from tf_records.corpora.synthetic import synthetic_stream

FAKE_WIKI = ("<page>\n  <title>Foo</title>\n  <text>Hello [[world]] &amp; caf\xe9 \u00fcber\n"
             "more text\n</text>\n</page>\n").encode("utf-8") * 40


def make_zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_tgz(path, members):
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def ids(data_dir, split):
    return np.fromfile(os.path.join(data_dir, f"{split}.ids.bin"), "<i4")


def info(data_dir):
    return json.loads(open(os.path.join(data_dir, "corpus-info.json")).read())


def test_enwik8_reference_drops_newlines_and_full_bytes_keeps_them(tmp_path):
    archive = make_zip(tmp_path / "enwik8.zip", {"enwik8": FAKE_WIKI})
    n = 300
    ref = tmp_path / "ref"
    tf_records.prepare("enwik8", ref, raw_path=archive, progress=False, eval_bytes=n,
                       verify_checksum=False)
    raw = np.frombuffer(FAKE_WIKI, np.uint8)
    splits = {"train": raw[:-2 * n], "valid": raw[-2 * n:-n], "test": raw[-n:]}
    vocab = tf_records.load_vocab(ref)
    # Naive reference: split bytes, then newlines vanish; vocabulary = observed bytes minus 10.
    observed = collections.Counter(b for s in splits.values() for b in s.tolist() if b != 10)
    assert len(vocab) == len(observed) and 10 not in vocab
    assert vocab.symbols == sorted(observed, key=lambda b: (-observed[b], b))
    for s, data in splits.items():
        expected = [vocab.id_of(b) for b in data.tolist() if b != 10]
        assert ids(ref, s).tolist() == expected
    assert info(ref)["cutoffs"] == [] and info(ref)["text_rules"]["drop_bytes"] == [10]
    full = tmp_path / "full"
    tf_records.prepare("enwik8", full, raw_path=archive, progress=False, eval_bytes=n,
                       verify_checksum=False, full_bytes=True)
    assert len(tf_records.load_vocab(full)) == 256
    for s, data in splits.items():
        assert ids(full, s).tolist() == data.tolist()


def test_enwik8_checksum_is_verified_by_default(tmp_path):
    archive = make_zip(tmp_path / "enwik8.zip", {"enwik8": FAKE_WIKI})
    with pytest.raises(tf_records.CorpusError, match="a1fa5ffddb56f4953e226637dabbb36a.*noverify_checksum"):
        tf_records.prepare("enwik8", tmp_path / "d", raw_path=archive, progress=False, eval_bytes=300)
    assert not os.path.exists(tmp_path / "d" / "corpus-info.json")


def test_text8_char_level(tmp_path):
    text = ("anarchism originated as a term of abuse first used against early working class " * 30).strip()
    archive = make_zip(tmp_path / "text8.zip", {"text8": text.encode()})
    tf_records.prepare("text8", tmp_path / "d", raw_path=archive, progress=False, eval_chars=200,
                       verify_checksum=False)
    vocab = tf_records.load_vocab(tmp_path / "d")
    assert vocab.level == "char" and len(vocab) == len(set(text))
    assert "\\u0020" in (tmp_path / "d" / "vocab.txt").read_text().split("\n")
    assert vocab.decode(ids(tmp_path / "d", "test")) == text[-200:]
    assert vocab.decode(ids(tmp_path / "d", "train")) == text[:-400]


WIKI_TRAIN = " = Title = \n\n The cat sat on the mat . \n A <unk> dog \t ran . \n\n"
WIKI_VALID = " The dog sat . \n\n"
WIKI_TEST = " A cat ran . \n"


@pytest.mark.parametrize("dataset,archive_dir", [("wt103", "wikitext-103"), ("wt2", "wikitext-2")])
def test_wikitext_word_level_eos_on_every_line_train_only_vocab(tmp_path, dataset, archive_dir):
    texts = {"train": WIKI_TRAIN, "valid": WIKI_VALID, "test": WIKI_TEST}
    archive = make_zip(tmp_path / "wt.zip", {f"{archive_dir}/wiki.{s}.tokens": t.encode() for s, t in texts.items()})
    tf_records.prepare(dataset, tmp_path / "d", raw_path=archive, progress=False)
    vocab = tf_records.load_vocab(tmp_path / "d")
    counts = collections.Counter(w for line in WIKI_TRAIN.split("\n")[:-1] for w in line.split())
    assert vocab.symbols == ["<eos>"] + sorted(counts, key=lambda w: (-counts[w], w))
    for s, t in texts.items():
        lines = t.split("\n")[:-1]
        expected = [vocab.id_of(w) for line in lines for w in line.split() + ["<eos>"]]
        assert ids(tmp_path / "d", s).tolist() == expected
    assert ids(tmp_path / "d", "train").tolist().count(0) == 5  # blank lines give <eos> too
    assert info(tmp_path / "d")["cutoffs"] == ([20000, 40000, 200000] if dataset == "wt103" else [])


def test_ptb_lower_cased_word_level(tmp_path):
    members = {"./simple-examples/data/ptb.train.txt": b" The Cat <unk> sat \n the mat N \n",
               "./simple-examples/data/ptb.valid.txt": b" the CAT \n",
               "./simple-examples/data/ptb.test.txt": b" mat sat \n"}
    archive = make_tgz(tmp_path / "simple-examples.tgz", members)
    tf_records.prepare("ptb", tmp_path / "d", raw_path=archive, progress=False)
    vocab = tf_records.load_vocab(tmp_path / "d")
    assert vocab.symbols[0] == "<eos>" and "the" in vocab and "The" not in vocab
    got = vocab.decode(ids(tmp_path / "d", "valid"))
    assert got == ["the", "cat", "<eos>"]


def test_lm1b_published_vocab_double_eos_shuffled_shards(tmp_path):
    base = "1-billion-word-language-modeling-benchmark-r13output/"
    shard = lambda k: "".join(f"sentence {k} number {i} .\n" for i in range(30)).encode()  # noqa: E731
    members = {base + f"training-monolingual.tokenized.shuffled/news.en-0000{k}-of-00100": shard(k)
               for k in (1, 2)}
    members[base + "heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050"] = b"sentence 1 oov .\n"
    archive = make_tgz(tmp_path / "lm1b.tar.gz", members)
    vocab_file = tmp_path / "1b_word_vocab.txt"
    words = ["<S>", "</S>", "<UNK>", "sentence", "number", "."] + [str(i) for i in range(30)]
    vocab_file.write_text("".join(f"{w}\t{100 - i}\n" for i, w in enumerate(words)))
    tf_records.prepare("lm1b", tmp_path / "d", raw_path=archive, vocab_path=str(vocab_file),
                       download=False, progress=False)
    vocab = tf_records.load_vocab(tmp_path / "d")
    assert vocab.symbols == words
    assert vocab.decode(ids(tmp_path / "d", "valid")) == ["<S>", "sentence", "1", "<UNK>", ".", "<S>"]
    np.testing.assert_array_equal(ids(tmp_path / "d", "valid"), ids(tmp_path / "d", "test"))
    train = vocab.decode(ids(tmp_path / "d", "train"))
    sentences = " ".join(train).split("<S> <S>")
    assert len(sentences) == 60
    first_shard = [s.strip(" <S>") for s in sentences[:30]]
    in_order = [f"sentence 1 number {i} ." for i in range(30)]
    assert sorted(first_shard) == sorted(in_order) and first_shard != in_order  # shuffled
    assert info(tmp_path / "d")["cutoffs"] == [60000, 100000, 640000]


@pytest.mark.parametrize("level", ["byte", "char", "word"])
def test_text_files_at_each_level(tmp_path, level):
    text = "".join(f"Line {i % 13}: naïve café {i % 7}\n" for i in range(200))
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    tf_records.prepare("text", tmp_path / "d", raw_path=path, level=level, progress=False)
    vocab = tf_records.load_vocab(tmp_path / "d")
    train, valid, test = (ids(tmp_path / "d", s) for s in ("train", "valid", "test"))
    if level == "byte":
        raw = text.encode()
        n = int(len(raw) * 0.05)
        assert train.tolist() == list(raw[:-2 * n]) and test.tolist() == list(raw[-n:])
    elif level == "char":
        n = int(len(text) * 0.05)
        assert vocab.decode(train) == text[:-2 * n] and vocab.decode(test) == text[-n:]
    else:
        lines = text.split("\n")[:-1]
        n = int(len(lines) * 0.05)
        expected = [w for line in lines[-n:] for w in line.split() + ["<eos>"]]
        assert vocab.decode(test) == expected
    # tokenize_text / detokenize use the same rules and invert each other for byte/char level.
    sample = "Line 3: naïve café 3\n"
    tokens = tf_records.tokenize_text(sample, tmp_path / "d")
    if level == "word":
        assert tf_records.detokenize(tokens, tmp_path / "d") == "Line 3: naïve café 3\n"
    else:
        assert tf_records.detokenize(tokens, tmp_path / "d") == sample


def test_builtin_corpus_is_deterministic_stdlib_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        tf_records.prepare("builtin", d, progress=False, max_bytes=200_000)
    np.testing.assert_array_equal(ids(a, "train"), ids(b, "train"))
    import platform
    import sysconfig
    from tf_records.corpora.builtin import stdlib_files
    root, files = stdlib_files()
    first = open(os.path.join(root, files[0]), "rb").read()[:1000]  # the stream starts with file 0
    assert files == sorted(files) and all(f.endswith(".py") for f in files)
    assert ids(a, "train")[:len(first)].tolist() == list(first)
    meta = info(a)
    assert meta["python_version"] == platform.python_version()
    assert meta["vocab_size"] == 256 and root == sysconfig.get_paths()["stdlib"]
    assert sum(meta["num_tokens"].values()) == 200_000


def test_synthetic_corpus_structure_and_best_loss(tmp_path):
    corpus = tf_records.get_corpus("synthetic", num_symbols=20, period=30, repeats=2,
                                   train_tokens=900, eval_tokens=180)
    assert corpus.best_loss == pytest.approx(math.log(20) / 3)
    tf_records.prepare("synthetic", tmp_path, progress=False, num_symbols=20, period=30, repeats=2,
                       train_tokens=900, eval_tokens=180)
    assert info(tmp_path)["best_loss_nats"] == pytest.approx(math.log(20) / 3)
    train = ids(tmp_path, "train")
    groups = train.reshape(-1, 3, 30)  # 900 = 10 groups of 3 copies of 30
    assert (groups[:, 1:] == groups[:, :1]).all()  # repeats equal the token `period` back
    assert len({tuple(g[0]) for g in groups}) == 10  # fresh chunks differ
    # Empirical: fresh tokens are ~uniform, so the unigram entropy of the train stream is ~ln K.
    freqs = np.bincount(train, minlength=20) / train.size
    assert -(freqs * np.log(freqs)).sum() > 0.9 * math.log(20)
    assert not np.array_equal(ids(tmp_path, "valid"), ids(tmp_path, "test"))
    np.testing.assert_array_equal(synthetic_stream(100, 5, 10, 1, 3), synthetic_stream(100, 5, 10, 1, 3))
