"""A user's own English text, at word and at char level, with nothing but the flags the
README's own-text flow needs:

    python runners/prepare_data.py --dataset=text --raw_path=book.txt --level=LEVEL --data_dir=D
    python runners/train.py --data_dir=D --model_dir=M

The text is real: about 1.5 MB of the documentation installed on this machine (package READMEs,
changelogs and licences, the standard library's docstrings; tests/support/english_text.py).
The default run must beat the unigram entropy of the validation split (the loss of the best
model of that split that ignores context); a run that does not learn ends with the verdict.
"""
import collections
import json
import math
import os
import subprocess
import sys

import pytest

import tf_records
from txl_tf.loss.loss_report import MAX_UNK_FRACTION, NARROW_MARGIN

from english_text import write_english_text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runner(name, *args, cwd):
    return subprocess.run([sys.executable, os.path.join(REPO, "runners", f"{name}.py"), *args],
                          cwd=str(cwd), capture_output=True, text=True, timeout=1800,
                          env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))


def split_entropy(data_dir, split):
    """Naive unigram entropy (nats/token) of a prepared split's tokens."""
    tokens = tf_records.load_token_stream(str(data_dir), split)
    counts = collections.Counter(tokens.tolist())
    return -sum(c / len(tokens) * math.log(c / len(tokens)) for c in counts.values())


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = tmp_path_factory.mktemp("english")
    path = write_english_text(root / "book.txt")
    assert os.path.getsize(path) >= 1_000_000
    return root


@pytest.fixture(scope="module")
def prepared(book):
    """level -> the prepare_data.py run of book.txt at that level (made on first use)."""
    runs = {}

    def prepare(level):
        if level not in runs:
            runs[level] = runner("prepare_data", "--dataset=text", "--raw_path=book.txt",
                                 f"--level={level}", f"--data_dir=data_{level}", cwd=book)
            assert runs[level].returncode == 0, runs[level].stderr[-3000:]
        return runs[level]
    return prepare


@pytest.mark.parametrize("level,unit", [("word", "ppl"), ("char", "bpc")])
def test_the_default_run_beats_the_unigram_baseline(book, prepared, level, unit):
    prepared(level)
    data_dir = book / f"data_{level}"
    trained = runner("train", f"--data_dir=data_{level}", f"--model_dir=runs_{level}",
                     cwd=book)
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads((book / f"runs_{level}" / "train_summary.json").read_text())
    info = json.loads((data_dir / "corpus-info.json").read_text())
    valid_entropy = split_entropy(data_dir, "valid")
    print(f"{level}: vocab {info['vocab_size']}, unk {info.get('unk_tokens')}, train tokens "
          f"{info['num_tokens']['train']}, train loss {summary['train_loss']:.4f} (unigram "
          f"{summary['unigram_entropy_nats']:.4f}), valid loss {summary['valid_loss']:.4f} "
          f"(unigram {valid_entropy:.4f}), {summary['wall_seconds']:.0f} s")
    assert summary["valid_loss"] < valid_entropy
    assert summary["train_loss"] < summary["unigram_entropy_nats"]
    assert summary["valid_unigram_entropy_nats"] == pytest.approx(valid_entropy, rel=1e-9)
    verdicts = [line for line in trained.stdout.splitlines() if line.startswith("verdict")]
    unk = info.get("unk_tokens", {}).get("valid", 0) / info["num_tokens"]["valid"]
    if level == "word" and unk > MAX_UNK_FRACTION and (
            summary["valid_loss"] > valid_entropy - NARROW_MARGIN):
        # Real text of this size leaves many valid words unknown and the word model only a
        # little below counting words: the verdict says so and names char level.
        assert summary["verdict"].startswith("verdict: this corpus is too small for word "
                                             f"level: {100 * unk:.1f}% of the valid words")
        assert "--level=char" in summary["verdict"] and verdicts == [summary["verdict"]]
    else:
        assert summary["verdict"] is None and not verdicts
    other = {"ppl": "bpc", "bpc": "ppl"}[unit]
    assert summary[f"valid_{unit}"] > 0 and f"valid_{other}" not in summary
    if level == "word":  # the vocabulary was chosen from the text
        assert info["min_freq_chosen"] > 1
        assert info["num_tokens"]["train"] >= 40 * info["vocab_size"]


def test_a_run_that_did_not_learn_ends_with_the_verdict(book, prepared):
    prepared("word")
    trained = runner("train", "--data_dir=data_word", "--model_dir=runs_one_step",
                     "--train_steps=1", cwd=book)
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads((book / "runs_one_step" / "train_summary.json").read_text())
    assert summary["valid_loss"] >= summary["valid_unigram_entropy_nats"]
    last = trained.stdout.strip().splitlines()[-1]
    assert last == summary["verdict"]
    assert last.startswith("verdict: the model does not beat counting words: its valid loss ")
    assert "--train_steps" in last and "--level=char" in last
