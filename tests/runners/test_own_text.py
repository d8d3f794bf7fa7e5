"""Your own text in two commands, typed as a user would:

    python runners/prepare_data.py --dataset=text --raw_path=book.txt --level=word --data_dir=D
    python runners/train.py --data_dir=D ...

* prepare_data.py's default record layout is train.py's: train.py reuses the records, and the
  dataset, file, level and corpus options that D/corpus-info.json records (nothing repeated);
* words of valid/test that train lacks map to <unk>, counted in corpus-info.json and reported;
* an option given to change the data is refused with a short `key: recorded -> given` diff;
* another layout (--tgt_len) is made silently from the token cache;
* `evaluate.py --model_dir=M` evaluates on the data M was trained on; `generate.py` warns in one
  line about prompt words the vocabulary lacks.
The runners run in this process (`runner_calls.call_runner`), training without XLA (its
compilation is not what is tested here).
"""
import glob
import json
import os
import random
import shutil

import pytest

from runner_calls import call_runner

# One layer: the data's paths through the runners do not depend on the stacking of layers.
pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

TINY = ["--n_layer=1", "--d_model=32", "--n_head=2", "--d_head=16", "--d_inner=64",
        "--warmup_steps=2", "--log_steps=5", "--save_steps=10", "--eval_steps=10",
        "--max_eval_batches=2", "--jit_compile=false"]
WORDS = "the cat sat on a mat dog ran to house big small red blue tree".split()


def runner(name, *args, cwd):
    return call_runner(name, args, cwd=cwd)


def user_lines(text):
    """The lines a user reads, without TensorFlow's C++ start-up log."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith(
        ("I0000", "W0000", "E0000", "WARNING: All log messages"))]


def record_infos(data_dir):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(data_dir, "record_info-*")))


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """book.txt (3,000 lines, about 22k words; every 37th line ends with a word seen once),
    prepared with prepare_data.py's defaults, and a model trained with train.py --data_dir=D."""
    root = tmp_path_factory.mktemp("own_text")
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))
             + (f" rare{i}" if i % 37 == 0 else "") for i in range(3000)]
    (root / "book.txt").write_text("\n".join(lines) + "\n")
    prepared = runner("prepare_data", "--dataset=text", "--raw_path=book.txt", "--level=word",
                      "--data_dir=D", cwd=root)
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    before = record_infos(root / "D")
    trained = runner("train", "--data_dir=D", "--model_dir=M", "--train_steps=10", *TINY,
                     cwd=root)
    assert trained.returncode == 0, trained.stderr[-2000:]
    return root, prepared, before, trained


def test_unknown_words_map_to_unk_counted_and_reported(book):
    root, prepared, _, _ = book
    info = json.loads((root / "D" / "corpus-info.json").read_text())
    valid_rare = sum(1 for i in range(3000) if i % 37 == 0 and 2700 <= i < 2850)
    test_rare = sum(1 for i in range(3000) if i % 37 == 0 and i >= 2850)
    assert info["unk_policy"] == "unk" and info["unk_tokens"] == {
        "train": 0, "valid": valid_rare, "test": test_rare}
    reported = [line for line in user_lines(prepared.stderr) if "map to <unk>" in line]
    assert len(reported) == 2 and reported[0].startswith(f"valid: {valid_rare} of ")


def test_train_reuses_the_recorded_corpus_and_default_layout(book):
    root, _, before, trained = book
    first = user_lines(trained.stdout)[0]
    assert "text (word, vocab " in first and "batch 16 x tgt_len 64" in first
    assert record_infos(root / "D") == before  # prepare_data.py's records were the ones used
    assert user_lines(trained.stderr) == []
    info = json.loads((root / "M" / "corpus-info.json").read_text())
    assert info["data_dir"] == str(root / "D") and info["dataset"] == "text"


def test_a_changed_option_is_a_short_diff(book):
    root = book[0]
    result = runner("train", "--dataset=text", "--data_dir=D", "--model_dir=M2", "--level=char",
                    "--lower_case", "--train_steps=10", *TINY, cwd=root)
    assert result.returncode == 2
    lines = user_lines(result.stderr)
    assert len(lines) == 1 and "level: 'word' -> 'char'; lower_case: False -> True" in lines[0]
    assert "{" not in lines[0] and not (root / "M2").exists()
    # The same file again, or the recorded level, is no change.
    again = runner("prepare_data", "--raw_path=book.txt", "--level=word", "--data_dir=D",
                   "--splits=", cwd=root)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["dataset"] == "text"


def test_another_layout_is_made_silently_from_the_cache(book):
    root = book[0]
    result = runner("train", "--dataset=text", "--data_dir=D", "--model_dir=M3", "--tgt_len=16",
                    "--mem_len=16", "--train_steps=5", *TINY, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    assert user_lines(result.stderr) == []
    assert any("tlen-16" in name for name in record_infos(root / "D"))


def test_evaluate_without_data_flags_uses_the_training_data(book):
    root = book[0]
    result = runner("evaluate", "--model_dir=M", "--noprogress", cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["split"] == "test" and out["tokens"] > 0 and out["ppl"] > 1
    # 10 steps of a tiny model on random words do not beat counting them: the verdict says so.
    assert out["loss"] >= out["unigram_entropy_nats"] and out["verdict"]
    lines = user_lines(result.stderr)
    assert len(lines) == 3 and lines[1].startswith("checkpoint: latest = M/ckpt-10 (step 10"), lines
    assert [lines[0], lines[2]] == [
        f"evaluating on {root / 'D'}, the data the model was trained on (from M/corpus-info.json)",
        out["verdict"]]
    # The recorded data is gone: one line, exit != 0.
    shutil.copytree(root / "M", root / "moved")
    info = json.loads((root / "moved" / "corpus-info.json").read_text())
    info["data_dir"] = str(root / "gone")
    (root / "moved" / "corpus-info.json").write_text(json.dumps(info))
    gone = runner("evaluate", "--model_dir=moved", "--noprogress", cwd=root)
    lines = user_lines(gone.stderr)
    assert gone.returncode != 0 and len(lines) == 1 and "--data_dir" in lines[0]
    assert "gone" in lines[0] and "Traceback" not in gone.stderr


def test_generate_warns_about_unknown_prompt_words(book):
    root = book[0]
    result = runner("generate", "--model_dir=M", "--prompt=the zebra sat on a quokka",
                    "--num_tokens=3", cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    warnings = [line for line in user_lines(result.stderr) if line.startswith("warning")]
    assert warnings == ["warning: 2 prompt word(s) not in the model's vocabulary, read as "
                        "<unk>: 'zebra', 'quokka'"]
    known = runner("generate", "--model_dir=M", "--prompt=the cat sat", "--num_tokens=3",
                   cwd=root)
    assert known.returncode == 0 and not any(
        line.startswith("warning") for line in user_lines(known.stderr))
