"""`runners/ablation.py` with the flags a user types (in this process: `runner_calls.call_runner`):
a tiny synthetic preset run of two variants, its JSON lines, table, attention lengths,
TensorBoard runs, resumption and bad inputs (training without XLA: its compilation is not what
is tested here).

The models are trained for a few steps only, so the losses themselves are not checked (the
readings are tested against naive computations in tests/ablation/test_ablation_readings.py)."""
import glob
import json
import os

import pytest

from runner_calls import call_runner

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

# The synthetic preset with train.py flags overriding its sizes (any flag beats the preset).
TINY = ["--preset=synthetic", "--train_tokens=6000", "--eval_tokens=1500", "--period=12",
        "--n_layer=1", "--d_model=16", "--n_head=2", "--d_head=8", "--d_inner=32",
        "--tgt_len=8", "--mem_len=8", "--per_host_train_bsz=4", "--train_steps=6",
        "--steps_per_loop=3", "--log_steps=3", "--eval_steps=6", "--save_steps=6",
        "--variants=ours-rec-full,alrfou-norec-half", "--eval_multiples=1,3", "--eval_rows=4",
        "--jit_compile=false"]


def _run(*args):
    return call_runner("ablation", args)


def _records(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablation")
    args = TINY + [f"--root={root / 'runs'}", f"--data_dir={root / 'data'}"]
    result = _run(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return root, args, result


def test_json_lines_attention_lengths_and_table(first_run):
    root, _, result = first_run
    rec, norec = _records(result.stdout)
    assert (rec["variant"], norec["variant"]) == ("ours-rec-full", "alrfou-norec-half")
    assert (rec["recurrence"], rec["loss"], norec["recurrence"], norec["loss"]) == (
        True, "full", False, "half")
    assert (rec["tgt_len"], rec["mem_len"], norec["mem_len"]) == (8, 8, 0)  # flags beat preset
    # Attention length: tgt_len + eval memory with recurrence, the window without.
    assert rec["train_attn_len"] == 16 and norec["train_attn_len"] == 8
    assert [(e["attn_len"], e["mem_len"], e["window"]) for e in rec["evals"]] == [
        (16, 8, None), (48, 40, None)]
    assert [(e["attn_len"], e["mem_len"], e["window"]) for e in norec["evals"]] == [
        (8, 0, 8), (24, 0, 24)]
    tokens = {e["tokens"] for r in (rec, norec) for e in r["evals"]}
    assert tokens == {4 * (1500 // 4 - 1)}  # both readings score the same tokens
    for r in (rec, norec):
        losses = [e["loss"] for e in r["evals"]]
        assert r["init_loss"] == losses[0] and r["best_loss"] == min(losses)
        assert r["best_attn_len"] == r["evals"][losses.index(min(losses))]["attn_len"]
        assert r["params"] > 0 and r["metric"] == "ppl"
    assert rec["params"] != norec["params"]  # different position parameters, reported
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("variant"))
    assert "1x: A loss/ppl" in lines[header] and "3x: A loss/ppl" in lines[header]
    assert lines[header + 2].split()[:4] == ["ours-rec-full", "yes", "ours", "full"]
    assert lines[header + 3].split()[:2] == ["alrfou-norec-half", "no"]
    assert "best possible 0.6931 nats" in result.stdout
    assert "estimated total" in result.stdout


def test_tensorboard_runs_under_one_root(first_run):
    root, _, _ = first_run
    for variant in ("ours-rec-full", "alrfou-norec-half"):
        for run in ("train", "valid", "eval-attn"):
            assert glob.glob(str(root / "runs" / variant / run / "events.out.tfevents.*")), run


def test_a_trained_variant_is_not_trained_again(first_run):
    _, args, result = first_run
    again = _run(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("is already trained to step 6") == 2
    assert "step 3/6" not in again.stdout
    first, second = _records(result.stdout), _records(again.stdout)
    assert [r["evals"] for r in second] == [r["evals"] for r in first]


@pytest.mark.parametrize("flag, message", [
    ("--variants=ours-rec-full,nope", "--variants must be distinct names"),
    ("--eval_multiples=1,x", "--eval_multiples items must each be an integer in [1, "),
    ("--eval_multiples=0", "--eval_multiples must be an integer in [1, "),
    ("--attn_type=0", "--attn_type is set by each variant"),
    ("--nohalf_loss", "--half_loss is set by each variant"),
])
def test_bad_inputs_are_one_line_before_any_work(tmp_path, flag, message):
    result = _run(*TINY, f"--root={tmp_path / 'runs'}", f"--data_dir={tmp_path / 'data'}", flag)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "runs")


def test_a_variant_flags_file_is_a_train_py_flagfile(first_run):
    root, _, _ = first_run
    variant_dir = root / "runs" / "alrfou-norec-half"
    text = (variant_dir / "flags.txt").read_text()
    assert "--preset=" not in text and "--variants=" not in text
    assert text.splitlines()[-4:] == [f"--model_dir={variant_dir}", "--attn_type=3",
                                      "--half_loss", "--mem_len=0"]
    result = call_runner("train", [f"--flagfile={variant_dir / 'flags.txt'}"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "is already trained to step 6" in result.stdout
