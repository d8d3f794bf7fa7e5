"""A user's own English text with nothing but the flags the README's own-text flow needs:

    python runners/prepare_data.py --dataset=text --raw_path=book.txt --level=LEVEL --data_dir=D
    python runners/train.py --data_dir=D --model_dir=M

The text is real: about 1.5 MB of the documentation installed on this machine (package READMEs,
changelogs and licences, the standard library's docstrings; tests/support/english_text.py).
The default run at char level, the level every verdict recommends, shortened to
`LEARNING_STEPS` steps (600 by default) on the book's first `CHAR_TEXT_BYTES`, must beat the
unigram entropy of the validation split (the loss of the best model of that split that ignores
context) and of the training split. It is run once: the levels share the training code,
and what word level does its own way (the vocabulary chosen from the text, the learning rate of
`for_level`, ppl, the verdicts) is checked here on a one-step word-level run that does not learn
and ends with the verdict, in test_train_flags.py (the level's learning rate) and in
test_word_level_starved.py (the verdict of a corpus too small for word level). The runners run
in this process (`runner_calls.call_runner`): what they do, not how a process starts, is tested.
"""
import collections
import json
import math
import os

import pytest

import tf_records

from english_text import write_english_text
from runner_calls import call_runner

# Half again the default run's warm-up (--warmup_steps=50): by then a char-level model of the
# default shape predicts the text 0.5 (training: the mean of the last loop, steps 51-75) and 0.3
# (validation) nats per character better than the unigram entropies of the splits.
LEARNING_STEPS = 75
# The char-level run reads the book's first 250 kB: three times what its steps read (75 x 16 x
# 64 characters), and a validation split of about 12,500 characters (preparing and evaluating
# more text checks nothing more).
CHAR_TEXT_BYTES = 250_000


def runner(name, *args, cwd):
    return call_runner(name, args, cwd=cwd)


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


def prepare(book, level, raw="book.txt"):
    """prepare_data.py's run of book/`raw` at `level` into book/data_<level>."""
    run = runner("prepare_data", "--dataset=text", f"--raw_path={raw}", f"--level={level}",
                 f"--data_dir=data_{level}", cwd=book)
    assert run.returncode == 0, run.stderr[-3000:]
    return book / f"data_{level}"


def test_the_default_run_beats_the_unigram_baseline(book):
    text = (book / "book.txt").read_bytes()
    (book / "chapter.txt").write_bytes(text[:text.index(b"\n", CHAR_TEXT_BYTES) + 1])
    data_dir = prepare(book, "char", raw="chapter.txt")
    trained = runner("train", "--data_dir=data_char", "--model_dir=runs_char",
                     f"--train_steps={LEARNING_STEPS}", cwd=book)
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads((book / "runs_char" / "train_summary.json").read_text())
    info = json.loads((data_dir / "corpus-info.json").read_text())
    valid_entropy = split_entropy(data_dir, "valid")
    print(f"char: vocab {info['vocab_size']}, train tokens {info['num_tokens']['train']}, "
          f"train loss {summary['train_loss']:.4f} (unigram "
          f"{summary['unigram_entropy_nats']:.4f}), valid loss {summary['valid_loss']:.4f} "
          f"(unigram {valid_entropy:.4f}), {summary['wall_seconds']:.0f} s")
    assert summary["valid_loss"] < valid_entropy
    assert summary["train_loss"] < summary["unigram_entropy_nats"]
    assert summary["valid_unigram_entropy_nats"] == pytest.approx(valid_entropy, rel=1e-9)
    verdicts = [line for line in trained.stdout.splitlines() if line.startswith("verdict")]
    assert summary["verdict"] is None and not verdicts
    assert summary["valid_bpc"] > 0 and "valid_ppl" not in summary


def test_a_run_that_did_not_learn_ends_with_the_verdict(book):
    data_dir = prepare(book, "word")
    info = json.loads((data_dir / "corpus-info.json").read_text())
    # the vocabulary was chosen from the text
    assert info["min_freq_chosen"] > 1
    assert info["num_tokens"]["train"] >= 40 * info["vocab_size"]
    # One step does not learn, compiled or not: no XLA compilation for it (the default run
    # above compiles).
    trained = runner("train", "--data_dir=data_word", "--model_dir=runs_one_step",
                     "--train_steps=1", "--jit_compile=false", cwd=book)
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads((book / "runs_one_step" / "train_summary.json").read_text())
    valid_entropy = split_entropy(data_dir, "valid")
    assert summary["valid_unigram_entropy_nats"] == pytest.approx(valid_entropy, rel=1e-9)
    assert summary["valid_loss"] >= summary["valid_unigram_entropy_nats"]
    assert summary["valid_ppl"] > 0 and "valid_bpc" not in summary
    last = trained.stdout.strip().splitlines()[-1]
    assert last == summary["verdict"]
    assert last.startswith("verdict: the model does not beat counting words: its valid loss ")
    assert "--train_steps" in last and "--level=char" in last
