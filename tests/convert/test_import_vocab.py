"""The released vocabulary pickles are converted to text without running code from them, and the
command-line importer writes a complete model directory (weights, config, vocabulary)."""
import json
import os
import pickle
import sys
import types

import numpy as np
import pytest

import reference_numpy as ref
from import_helpers import write_tf1_checkpoint
from runner_calls import call_runner
from tf_records.vocab import imported_files
from tf_records.vocab.reference_pickle import UnsafePickleError, load_vocab_pickle
from tf_records.vocab.vocabulary import Vocabulary
import txl_tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reference_cache_pickle(path, symbols, dataset):
    """A pickle shaped like the reference cache.pkl: a `data_utils.Corpus` holding a
    `vocabulary.Vocab` (idx2sym, sym2idx, counter) and NumPy splits."""
    vocabulary = types.ModuleType("vocabulary")
    data_utils = types.ModuleType("data_utils")

    class Vocab:
        pass

    class Corpus:
        pass

    Vocab.__module__, Vocab.__qualname__ = "vocabulary", "Vocab"
    Corpus.__module__, Corpus.__qualname__ = "data_utils", "Corpus"
    vocabulary.Vocab, data_utils.Corpus = Vocab, Corpus
    saved = {k: sys.modules.get(k) for k in ("vocabulary", "data_utils")}
    sys.modules.update(vocabulary=vocabulary, data_utils=data_utils)
    try:
        vocab = Vocab()
        vocab.__dict__.update(
            special=[], min_freq=0, max_size=None, lower_case=True, delimiter=None,
            idx2sym=list(symbols),
            sym2idx=__import__("collections").OrderedDict((s, i) for i, s in enumerate(symbols)),
            counter=__import__("collections").Counter({s: 3 for s in symbols}))
        corpus = Corpus()
        corpus.__dict__.update(dataset=dataset, vocab=vocab,
                               train=np.arange(10, dtype=np.int64), valid=np.arange(3),
                               test=np.arange(4))
        with open(path, "wb") as f:
            pickle.dump(corpus, f, protocol=2)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _python2_vocab_pickle(symbols):
    """Protocol-2 opcodes as Python 2 writes a Vocab whose symbols are byte strings."""
    out = b"\x80\x02cvocabulary\nVocab\n)\x81}U\x07idx2sym]("
    for s in symbols:
        raw = s.encode("utf-8")
        out += b"U" + bytes([len(raw)]) + raw
    return out + b"esb."


def test_reference_cache_pickle_to_text(tmp_path):
    symbols = [str(b) for b in (101, 32, 116, 97, 60)]
    path = str(tmp_path / "cache.pkl")
    _reference_cache_pickle(path, symbols, "enwik8")
    got, info = load_vocab_pickle(path)
    assert got == symbols and info["dataset"] == "enwik8"
    written = imported_files.write_vocabulary(str(tmp_path / "out"), got, "enwik8", n_token=5)
    assert written["level"] == "byte" and written["rules"]["drop_bytes"] == [10]
    vocab = Vocabulary.load(str(tmp_path / "out" / "vocab.txt"), "byte")
    assert vocab.symbols == [101, 32, 116, 97, 60]
    assert vocab.checksum() == written["vocab_checksum"]


def test_python2_byte_strings_are_utf8(tmp_path):
    path = tmp_path / "vocab.pkl"
    path.write_bytes(_python2_vocab_pickle(["<eos>", "the", "café"]))
    assert load_vocab_pickle(str(path))[0] == ["<eos>", "the", "café"]


class _Exploit:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return os.system, (f"touch {self.target}",)


class _EvalExploit:
    def __reduce__(self):
        return eval, ("__import__('os').getcwd()",)


def test_malicious_pickles_are_refused_before_running(tmp_path):
    target = tmp_path / "pwned"
    path = tmp_path / "cache.pkl"
    path.write_bytes(pickle.dumps({"idx2sym": ["a"], "x": _Exploit(target)}, protocol=2))
    with pytest.raises(UnsafePickleError, match="system"):
        load_vocab_pickle(str(path))
    assert not target.exists()
    path.write_bytes(pickle.dumps([_EvalExploit()], protocol=4))
    with pytest.raises(UnsafePickleError, match="eval"):
        load_vocab_pickle(str(path))
    # A harmless-looking global outside the allow-list is refused too.
    path.write_bytes(pickle.dumps({"idx2sym": ["a"], "f": np.float64(1.0).__class__}, protocol=2))
    with pytest.raises(UnsafePickleError):
        load_vocab_pickle(str(path))


def test_command_line_import_writes_a_complete_model_dir(tmp_path):
    cfg = dict(n_layer=1, d_model=8, n_head=2, d_head=4, d_inner=16, n_token=6, div_val=1,
               cutoffs=[])
    params = ref.random_tf1_params(cfg, np.random.default_rng(0))
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-0"), params)
    symbols = ["<eos>", "a", "b", "c", "d", "e"]
    _reference_cache_pickle(str(tmp_path / "cache.pkl"), symbols, "wt103")
    json.dump({"vocab_size": 6, "cutoffs": [0, 6], "dataset": "wt103"},
              open(tmp_path / "corpus-info.json", "w"))
    model_dir = str(tmp_path / "model")
    result = call_runner(
        "import_weights", ["--source=tf1",
         f"--checkpoint={prefix}", f"--vocab_pickle={tmp_path / 'cache.pkl'}",
         f"--corpus_info={tmp_path / 'corpus-info.json'}", f"--model_dir={model_dir}",
         "--tgt_len=5", "--mem_len=7", "--clamp_len=3", "--same_length"])
    assert result.returncode == 0, result.stderr[-3000:]
    model = txl_tf.load_model(model_dir)
    c = model.config
    assert (c.n_token, c.tgt_len, c.mem_len, c.clamp_len, c.same_length) == (6, 5, 7, 3, True)
    info = json.load(open(os.path.join(model_dir, "corpus-info.json")))
    assert info["level"] == "word" and info["rules"]["eos"] == "<eos>"
    assert Vocabulary.load(os.path.join(model_dir, "vocab.txt"), "word").symbols == symbols

    # A vocabulary of another size is rejected, and nothing is written.
    _reference_cache_pickle(str(tmp_path / "other.pkl"), symbols[:4], "wt103")
    result = call_runner(
        "import_weights", ["--source=tf1",
         f"--checkpoint={prefix}", f"--vocab_pickle={tmp_path / 'other.pkl'}",
         f"--model_dir={tmp_path / 'model2'}"])
    assert result.returncode != 0 and "4 symbols" in result.stderr
    assert not os.path.exists(tmp_path / "model2" / "checkpoint")

    # Importing into a directory that holds a model is refused before its vocabulary changes.
    _reference_cache_pickle(str(tmp_path / "reversed.pkl"), symbols[::-1], "wt103")
    result = call_runner(
        "import_weights", ["--source=tf1",
         f"--checkpoint={prefix}", f"--vocab_pickle={tmp_path / 'reversed.pkl'}",
         f"--model_dir={model_dir}"])
    assert result.returncode == 2 and "already holds a checkpoint" in result.stderr
    assert Vocabulary.load(os.path.join(model_dir, "vocab.txt"), "word").symbols == symbols


def test_huggingface_style_vocab_dict(tmp_path):
    """A Hugging Face `vocab.pkl` (the tokenizer's attribute dict) with a compiled regex: the
    regex becomes an inert stand-in, the symbols come out."""
    import re

    state = {"idx2sym": ["<eos>", "the", ","], "sym2idx": {"<eos>": 0}, "lower_case": False,
             "punction_without_space_before_pattern": re.compile(r"[^\s][\.,]")}
    path = tmp_path / "vocab.pkl"
    path.write_bytes(pickle.dumps(state, protocol=2))
    assert load_vocab_pickle(str(path))[0] == ["<eos>", "the", ","]


def test_the_converter_is_model_code_only():
    """txl_tf/convert imports neither the data package nor the runners: the runner writes the
    vocabulary."""
    import ast
    folder = os.path.join(REPO, "txl_tf", "convert")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(folder, name)).read())
        imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names]
        imported += [node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)]
        assert not [m for m in imported if m.split(".")[0] in ("tf_records", "runners")], name
