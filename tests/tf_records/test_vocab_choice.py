"""The word vocabulary chosen from the corpus (`tf_records.vocab.choice`) and the warning for a
corpus too small for its vocabulary, through `prepare` and `runners/prepare_data.py`."""
import collections
import json
import random

import pytest

import tf_records
from tf_records.vocab import choice

from runner_calls import call_runner



def naive_min_freq(counts, num_tokens, specials, target):
    """The smallest k whose kept words leave `target` tokens per entry, trying every k."""
    for k in range(1, max(counts.values()) + 2):
        kept = sum(1 for c in counts.values() if c >= k)
        if kept and num_tokens >= target * (kept + specials):
            return k
    return 1


@pytest.mark.parametrize("seed", range(6))
def test_auto_min_freq_is_the_smallest_count_that_reaches_the_target(seed):
    rng = random.Random(seed)
    counts = {f"w{i}": max(1, int(rng.paretovariate(1.1))) for i in range(rng.randint(1, 400))}
    num_tokens = sum(counts.values()) + rng.randint(0, 50)
    target = rng.choice([2, 5, 20, 40])
    assert choice.auto_min_freq(counts, num_tokens, 2, target) == \
        naive_min_freq(counts, num_tokens, 2, target)


def write_zipf_text(path, lines=2000, seed=0):
    """Lines of words drawn from a Zipf-like law: many words are seen once or twice."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(4000)]
    weights = [1.0 / (i + 1) for i in range(len(words))]
    with open(path, "w") as fh:
        for _ in range(lines):
            fh.write(" ".join(rng.choices(words, weights, k=rng.randint(4, 12))) + "\n")
    return str(path)


def test_prepare_chooses_the_minimum_count_and_records_it(tmp_path):
    path = write_zipf_text(tmp_path / "z.txt")
    summary = tf_records.prepare("text", str(tmp_path / "auto"), raw_path=path, level="word",
                                 progress=False)
    info = tf_records.read_corpus_info(str(tmp_path / "auto"))
    k = info["min_freq_chosen"]
    lines = open(path).read().splitlines()
    train = lines[:len(lines) - 2 * int(len(lines) * 0.05)]
    counts = collections.Counter(w for line in train for w in line.split())
    num_tokens = sum(counts.values()) + len(train)  # every line ends with <eos>
    assert k == naive_min_freq(counts, num_tokens, 2, choice.TOKENS_PER_ENTRY) > 1
    kept = {w for w, c in counts.items() if c >= k}
    assert summary["vocab_size"] == len(kept) + 2  # + <eos>, <unk>
    assert info["unk_tokens"]["train"] == sum(c for c in counts.values() if c < k)
    assert num_tokens >= choice.TOKENS_PER_ENTRY * summary["vocab_size"]
    # Explicit limits override the choice.
    every = tf_records.prepare("text", str(tmp_path / "every"), raw_path=path, level="word",
                               min_freq=1, progress=False)
    assert every["vocab_size"] == len(counts) + 2
    capped = tf_records.prepare("text", str(tmp_path / "capped"), raw_path=path, level="word",
                                max_size=100, progress=False)
    assert capped["vocab_size"] == 100
    for name in ("every", "capped"):
        assert "min_freq_chosen" not in tf_records.read_corpus_info(str(tmp_path / name))


def prepare_data(*args, cwd):
    """`runners/prepare_data.py args` (in this process: what it writes and prints is tested)."""
    return call_runner("prepare_data", [*args, "--splits="], cwd=cwd)


def test_prepare_data_says_at_once_when_the_corpus_is_too_small(tmp_path):
    path = write_zipf_text(tmp_path / "z.txt", lines=300)
    every = prepare_data("--dataset=text", f"--raw_path={path}", "--level=word", "--min_freq=1",
                         "--data_dir=every", cwd=tmp_path)
    assert every.returncode == 0, every.stderr
    info = json.loads((tmp_path / "every" / "corpus-info.json").read_text())
    tokens, size = info["num_tokens"]["train"], info["vocab_size"]
    assert tokens < choice.MIN_TOKENS_PER_ENTRY * size
    warnings = [line for line in every.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: the corpus is too small for its vocabulary: the train split has {tokens:,} "
        f"tokens for {size:,} vocabulary entries ({tokens / size:.1f} per entry, fewer than 20);"
        " a model will hardly beat counting them. Use more text, or a smaller vocabulary "
        "(--min_freq, --max_size) or --level=char."]
    # The chosen vocabulary of the same text is small enough: no warning, and the choice and
    # its <unk> rate are reported.
    auto = prepare_data("--dataset=text", f"--raw_path={path}", "--level=word",
                        "--data_dir=auto", cwd=tmp_path)
    assert auto.returncode == 0, auto.stderr
    assert not [line for line in auto.stderr.splitlines() if line.startswith("warning:")]
    chosen = json.loads((tmp_path / "auto" / "corpus-info.json").read_text())["min_freq_chosen"]
    reported = [line for line in auto.stderr.splitlines() if line.startswith("vocabulary:")]
    assert len(reported) == 1 and f"seen at least {chosen} times" in reported[0]
    assert "become <unk>" in reported[0] and "--min_freq" in reported[0]
