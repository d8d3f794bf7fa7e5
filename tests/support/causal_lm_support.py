"""`txl_tf.TransformerXLCausalLM` builders and tiny model directories of every text level,
shared by the tests of `txl_tf/causal_lm/` (generation, presets, export).

`causal_lm(backbone, preprocessor)` is the one place that builds the object the functions take
(`.backbone`, `.preprocessor`); `from_preset` mirrors the class method.

Example:
  >>> lm = from_preset(word_model_dir(tmp_path / "m"))
  >>> generate(lm, "w1 w2", max_length=6)
"""
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import txl_tf
from tf_records.causal_lm_preprocessor import CausalLMPreprocessor
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary

from tiny import TRAIN_FLAGS, tiny_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORDS = ["<eos>", "<unk>"] + [f"w{i}" for i in range(21)]  # 23 ids
CHARS = ["\n", " "] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["é"]


# The ids the preset tests compare log-probabilities on: [2, 20], within every tiny vocabulary
PRESET_IDS = np.arange(1, 41, dtype=np.int32).reshape(2, 20) * 3


def log_probs(backbone):
    """The log-probabilities [2, 20, V] of `PRESET_IDS` from zero memory."""
    return backbone(tf.constant(PRESET_IDS), mems=None, training=False)["log_probs"].numpy()


def causal_lm(backbone, preprocessor=None):
    """`txl_tf.TransformerXLCausalLM(backbone, preprocessor)`."""
    return txl_tf.TransformerXLCausalLM(backbone, preprocessor=preprocessor)


def from_preset(preset, **kwargs):
    """`TransformerXLCausalLM.from_preset(preset, **kwargs)`."""
    return txl_tf.TransformerXLCausalLM.from_preset(preset, **kwargs)


def vocabulary(level):
    """(Vocabulary, TextRules) of a tiny vocabulary of `level` (word: with <unk> and <eos>)."""
    if level == "word":
        return (Vocabulary(WORDS, "word", specials=["<eos>", "<unk>"], unk_symbol="<unk>",
                           unk_policy="unk"), TextRules("word", eos="<eos>"))
    if level == "char":
        return Vocabulary(CHARS, "char"), TextRules("char")
    return Vocabulary.all_bytes(), TextRules("byte")


def model_dir(path, level="word", seed=0, **changes):
    """A txl-tf model directory of a random tiny model with a `level` vocabulary; returns
    (path as str, model)."""
    vocab, rules = vocabulary(level)
    model = tiny_model(seed=seed, n_token=len(vocab), **changes)
    txl_tf.save_model(model, str(path))
    write_model_vocab(str(path), vocab, rules, dataset="tiny", specials=vocab.specials,
                      unk_symbol=vocab.unk_symbol, unk_policy=vocab.unk_policy)
    return str(path), model


def preprocessor_of(directory):
    return CausalLMPreprocessor(str(directory))


TRAIN_STEPS = ["--warmup_steps=1", "--steps_per_loop=2", "--log_steps=2", "--save_steps=2",
               "--eval_steps=2", "--max_eval_batches=1", "--per_host_train_bsz=4",
               "--dataset=builtin", "--corpus_option=max_bytes=20000", "--train_steps=4"]


def start_runner(name, args, cwd=None):
    """`python runners/<name>.py args` started as a user starts it (a Popen with text pipes;
    `finish_runner` waits for it)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    return subprocess.Popen([sys.executable, os.path.join(REPO, "runners", f"{name}.py")]
                            + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, env=env)


def finish_runner(proc):
    """The CompletedProcess of `proc` (from `start_runner`), once it ended (killed after 600
    s)."""
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def run_runner(name, args, cwd=None):
    """`python runners/<name>.py args` as a user runs it (a CompletedProcess)."""
    return finish_runner(start_runner(name, args, cwd))


def trained_model_dir(root):
    """A byte-level model directory trained 4 steps by runners/train.py on the builtin text
    (checkpoints ckpt-2, ckpt-4 and best/); returns its path."""
    model, data = os.path.join(root, "model"), os.path.join(root, "data")
    proc = run_runner("train", TRAIN_FLAGS + TRAIN_STEPS + [f"--model_dir={model}",
                                                            f"--data_dir={data}"], cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return model
