"""Vocabulary files, tokenization backends, layouts and the vectorized Example codec."""
import collections

import numpy as np
import pytest
import tensorflow as tf

import tf_records
from tf_records.records.example_codec import serialize_int64_examples
from tf_records.text.tokenize import PY_WHITESPACE, TextRules, encode_word_lines, word_symbols


def naive_word_ids(lines, rules, vocab_symbols, unk=None):
    """Plain-Python reference: strip, lower, split, eos; dict lookup."""
    index = {s: i for i, s in enumerate(vocab_symbols)}
    out = []
    for line in lines:
        line = line.strip()
        if rules.lower_case:
            line = line.lower()
        words = line.split()
        if rules.double_eos:
            words = [rules.double_eos] + words + [rules.double_eos]
        elif rules.eos:
            words = words + [rules.eos]
        out.extend(index.get(w, unk) for w in words)
    return out


TRICKY_LINES = [
    "The quick  brown fox\tjumps", "", "   ", "naïve café ΣΟΦΙΑ İstanbul straße",
    "a\x1cb\x1dc\x1ed\x1fe", "non\xa0breaking\u3000ideographic\u2028line\u2029para\x85nel",
    "  leading and trailing  ", "emoji 🙂 mixed\u200bzero-width", "<unk> <eos> tokens",
]


@pytest.mark.parametrize("lower", [False, True])
def test_tf_text_ids_equal_plain_python_ids(lower):
    rules = TextRules("word", lower_case=lower, eos="<eos>")
    counter = collections.Counter()
    for line in TRICKY_LINES:
        counter.update(word_symbols(line, rules))
    vocab = tf_records.Vocabulary.build(counter, "word", specials=["<eos>"])
    naive = naive_word_ids(TRICKY_LINES, rules, vocab.symbols)
    py = encode_word_lines(TRICKY_LINES, vocab, rules, backend="python")
    tft = encode_word_lines(TRICKY_LINES, vocab, rules, backend="tf_text", batch_lines=4)
    assert py.tolist() == naive
    assert tft.tolist() == naive
    # Every Python whitespace character separates words in both backends.
    line = "x".join(PY_WHITESPACE)
    vocab2 = tf_records.Vocabulary(["x"], "word")
    assert encode_word_lines([line], vocab2, TextRules("word"), backend="tf_text").tolist() == \
        [0] * len(line.split())


def test_double_eos_and_unk_policy_both_backends():
    rules = TextRules("word", double_eos="<S>")
    vocab = tf_records.Vocabulary(["<S>", "<UNK>", "a", "b"], "word", unk_symbol="<UNK>", unk_policy="unk")
    lines = ["a b zz", "", "b"]
    expected = naive_word_ids(lines, rules, vocab.symbols, unk=1)
    for backend in ("python", "tf_text"):
        assert encode_word_lines(lines, vocab, rules, backend=backend).tolist() == expected
    strict = tf_records.Vocabulary(["<S>", "a", "b"], "word")
    for backend in ("python", "tf_text"):
        with pytest.raises(tf_records.VocabularyError, match="zz"):
            encode_word_lines(lines, strict, rules, backend=backend)


@pytest.mark.parametrize("level,symbols", [
    ("byte", [10, 32, 0, 255, 101]),
    ("char", [" ", "\n", "\\", "a", "é", "\t", "🙂", "_", "\u2028"]),
    ("word", ["<eos>", "the", "naïve", "\\u0020", "a_b"]),
])
def test_vocabulary_file_round_trip(tmp_path, level, symbols):
    vocab = tf_records.Vocabulary(symbols, level)
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert len(lines) == len(symbols) + 1 and lines[-1] == ""  # one symbol per line, id order
    assert all(ln and not any(c.isspace() for c in ln) for ln in lines[:-1])
    if level == "byte":
        assert lines[:-1] == [str(s) for s in symbols]
    loaded = tf_records.Vocabulary.load(path, level)
    assert loaded == vocab and loaded.checksum() == vocab.checksum()
    assert [loaded.id_of(s) for s in symbols] == list(range(len(symbols)))


def test_build_order_min_freq_max_size_and_checksum():
    counts = {"b": 5, "a": 5, "c": 9, "d": 1, "e": 2}
    vocab = tf_records.Vocabulary.build(counts, "word", specials=["<eos>"], min_freq=2)
    # Naive: specials, then by (-count, symbol), count >= min_freq.
    naive = ["<eos>"] + [s for s, c in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if c >= 2]
    assert vocab.symbols == naive
    capped = tf_records.Vocabulary.build(counts, "word", specials=["<eos>"], max_size=3,
                                         unk_symbol="<unk>", unk_policy="unk")
    assert capped.symbols == ["<eos>", "<unk>", "c"]
    assert capped.encode(["c", "zzz"]).tolist() == [2, 1]
    other = tf_records.Vocabulary.build({**counts, "d": 3}, "word", specials=["<eos>"], min_freq=2)
    assert other.checksum() != vocab.checksum()


def test_byte_and_char_encode_decode_match_naive():
    data = "héllo wörld\n🙂 end".encode("utf-8")
    vocab = tf_records.Vocabulary.build(collections.Counter(data), "byte")
    ids = vocab.encode(data)
    assert ids.tolist() == [vocab.symbols.index(b) for b in data]
    assert vocab.decode(ids) == data
    text = data.decode("utf-8")
    cvocab = tf_records.Vocabulary.build(collections.Counter(text), "char")
    cids = cvocab.encode(text)
    assert cids.tolist() == [cvocab.symbols.index(c) for c in text]
    assert cvocab.decode(cids) == text
    with pytest.raises(tf_records.VocabularyError, match="unknown char symbol 'Z'"):
        cvocab.encode("Z")


def test_bad_vocabulary_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n300\n")
    with pytest.raises(tf_records.VocabularyError, match="0..255"):
        tf_records.Vocabulary.load(bad, "byte")
    bad.write_text("a\na\n")
    with pytest.raises(tf_records.VocabularyError, match="twice"):
        tf_records.Vocabulary.load(bad, "word")
    bad.write_text("")
    with pytest.raises(tf_records.VocabularyError, match="empty"):
        tf_records.Vocabulary.load(bad, "word")


def test_record_layout_validation_and_derived_values():
    layout = tf_records.RecordLayout(tgt_len=8, per_replica_batch=3, replicas_per_host=2, num_hosts=2)
    assert layout.per_host_batch == 6 and layout.num_streams == 12
    assert layout.basename("train") == "train.bsz-6.tlen-8.core-2.hosts-2.passes-1"
    for bad in [dict(tgt_len=0, per_replica_batch=1), dict(tgt_len=4, per_replica_batch=-1),
                dict(tgt_len=4.0, per_replica_batch=1), dict(tgt_len=4, per_replica_batch=1, num_hosts=True),
                dict(tgt_len=4, per_replica_batch=1, last_segment="keep")]:
        with pytest.raises(tf_records.LayoutError):
            tf_records.RecordLayout(**bad)


@pytest.mark.parametrize("high", [100, 300, 70000, 3_000_000])
def test_example_codec_bytes_equal_protobuf(high):
    rng = np.random.default_rng(high)
    x = rng.integers(0, high, size=(20, 13))
    y = rng.integers(-1, high, size=(20, 13))
    buf, offsets = serialize_int64_examples({"inputs": x, "labels": y})
    for i in range(20):
        ex = tf.train.Example(features=tf.train.Features(feature={
            "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=x[i].tolist())),
            "labels": tf.train.Feature(int64_list=tf.train.Int64List(value=y[i].tolist()))}))
        assert buf[offsets[i]:offsets[i + 1]].tobytes() == ex.SerializeToString(deterministic=True)


@pytest.mark.parametrize("high", [100, 300, 70000])
def test_window_encoder_equals_general_codec(high):
    from tf_records.records.example_codec import WindowRecordEncoder, encode_varint_stream
    rows = np.random.default_rng(high).integers(0, high, size=(3, 50))
    encoder = WindowRecordEncoder(*encode_varint_stream(rows))
    starts = np.array([s * 50 + t * 7 for t in range(7) for s in range(3)])
    records = list(encoder.records(starts, 7))
    flat = rows.reshape(-1)
    x = np.stack([flat[a:a + 7] for a in starts])
    y = np.stack([flat[a + 1:a + 8] for a in starts])
    buf, offsets = serialize_int64_examples({"inputs": x, "labels": y})
    assert records == [buf[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(starts))]
