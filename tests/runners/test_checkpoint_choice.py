"""`--checkpoint=latest|best|ckpt-N` of evaluate.py, generate.py and export.py, with the flags a
user types (the runners run in this process: `runner_calls.call_runner`), on a tiny model whose best checkpoint on validation is not its newest one.

The model is trained for 4 steps (evaluated and saved every 2), then resumed to step 8 with a
learning rate 250 times higher: the validation loss rises, so best/ keeps an earlier step than
the newest checkpoint. The test reads which step that is from best/best.json and checks that
each command used it: the step it records, and the same figures as the training checkpoint of
that step (`--checkpoint=ckpt-N`) and as `--model_dir=MODEL_DIR/best`.
"""
import json
import os
import re
import shutil

import numpy as np
import pytest

import txl_tf
from runner_calls import call_runner as run_runner
from tiny import train_flags

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

# One layer: which checkpoint a command reads does not depend on the stacking of layers.
MODEL = train_flags(n_layer=1)
STEPS = ["--warmup_steps=1", "--steps_per_loop=2", "--log_steps=2", "--save_steps=2",
         "--eval_steps=2", "--max_eval_batches=1", "--per_host_train_bsz=4",
         "--dataset=builtin", "--corpus_option=max_bytes=20000", "--jit_compile=false"]


def last_json(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """(model directory, best step, newest step) of a run whose best/ is not its newest."""
    root = tmp_path_factory.mktemp("checkpoint_choice")
    model, data = str(root / "model"), str(root / "data")
    common = MODEL + STEPS + [f"--model_dir={model}", f"--data_dir={data}"]
    first = run_runner("train", common + ["--train_steps=4"], cwd=str(root))
    assert first.returncode == 0, first.stderr[-3000:]
    second = run_runner("train", common + ["--train_steps=8", "--learning_rate=0.5"],
                        cwd=str(root))
    assert second.returncode == 0, second.stderr[-3000:]
    with open(os.path.join(model, "best", "best.json")) as f:
        best = json.load(f)["step"]
    newest = int(txl_tf.latest_checkpoint(model).rsplit("-", 1)[1])
    assert newest == 8 and best < newest, "the run must keep an earlier step in best/"
    for name in ("vocab.txt", "corpus-info.json"):  # best/ is a complete model directory
        with open(os.path.join(model, name), "rb") as a, \
                open(os.path.join(model, "best", name), "rb") as b:
            assert a.read() == b.read(), name
    return model, best, newest


EVAL = ["--max_steps=2", "--noprogress", "--tb_dir="]


def test_evaluate_uses_the_checkpoint_asked_for(run_dir):
    model, best, newest = run_dir
    default = run_runner("evaluate", [f"--model_dir={model}"] + EVAL, cwd=model)
    latest = last_json(default)
    assert (latest["checkpoint_name"], latest["checkpoint_step"]) == ("latest", newest)
    # the default names the newest checkpoint and points to best/ (which is another step)
    line = [ln for ln in default.stderr.splitlines() if ln.startswith("checkpoint: ")]
    assert len(line) == 1 and line[0].startswith(
        f"checkpoint: latest = {model}/ckpt-{newest} (step {newest}); best/ holds step {best} "
        "(valid loss ") and line[0].endswith("--checkpoint=best uses it"), default.stderr
    chosen = run_runner("evaluate", [f"--model_dir={model}", "--checkpoint=best"] + EVAL,
                        cwd=model)
    result = last_json(chosen)
    assert (result["checkpoint_name"], result["checkpoint_step"]) == ("best", best)
    assert result["checkpoint"] == os.path.join(model, "best", f"ckpt-{best}")
    assert f"checkpoint: best = {result['checkpoint']} (step {best}" in chosen.stderr
    # the same weights as the training checkpoint of that step, and as best/ as a model_dir
    same_step = last_json(run_runner("evaluate", [f"--model_dir={model}",
                                                  f"--checkpoint=ckpt-{best}"] + EVAL, cwd=model))
    as_dir = last_json(run_runner("evaluate", [f"--model_dir={model}/best"] + EVAL, cwd=model))
    assert same_step["checkpoint"] == os.path.join(model, f"ckpt-{best}")
    assert result["loss"] == pytest.approx(same_step["loss"], rel=1e-6)
    assert as_dir["loss"] == pytest.approx(result["loss"], rel=1e-6)
    assert as_dir["checkpoint_step"] == best and result["loss"] != latest["loss"]


def test_generate_uses_the_best_checkpoint(run_dir):
    model, best, _ = run_dir
    args = [f"--model_dir={model}", "--prompt=def f(x):", "--num_tokens=12",
            "--temperature=0"]
    with_ids = last_json(run_runner("generate", args + ["--checkpoint=best", "--output_ids"],
                                    cwd=model))
    assert (with_ids["checkpoint_name"], with_ids["checkpoint_step"]) == ("best", best)
    same_step = last_json(run_runner("generate", args + [f"--checkpoint=ckpt-{best}",
                                                         "--output_ids"], cwd=model))
    assert len(with_ids["ids"]) == 12 and with_ids["ids"] == same_step["ids"]


def test_export_records_the_best_step(run_dir, tmp_path):
    model, best, _ = run_dir
    result = last_json(run_runner("export", [f"--model_dir={model}", "--checkpoint=best",
                                             f"--export_dir={tmp_path}", "--notext_signatures",
                                             "--warmup_requests=0"],
                                  cwd=str(tmp_path)))
    with open(os.path.join(result["export_path"], "assets.extra", "txl_export.json")) as f:
        info = json.load(f)
    assert (info["checkpoint_name"], info["checkpoint_step"]) == ("best", best)
    assert result["checkpoint_step"] == best


def test_python_api_loads_the_best_weights(run_dir, tmp_path):
    model, best, newest = run_dir
    loaded = txl_tf.load_model(model, checkpoint="best")
    same_step = txl_tf.load_model(model, checkpoint=f"ckpt-{best}")  # the training checkpoint
    newest_model = txl_tf.load_model(model)
    for ours, theirs in zip(loaded.weights, same_step.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    assert any(not np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(loaded.weights, newest_model.weights))
    choice = txl_tf.choose_checkpoint(model, "best")
    assert (choice.step, choice.path) == (best, os.path.join(model, "best", f"ckpt-{best}"))
    assert txl_tf.choose_checkpoint(model).step == newest
    # once the training checkpoint of the best step is rotated away, ckpt-N is best/'s
    def rotate(directory, names):  # model_dir's own ckpt-N files, not best/'s
        return [n for n in names if directory == model
                and (n.startswith(f"ckpt-{best}.") or n == "memory")]
    rotated = shutil.copytree(model, str(tmp_path / "rotated"), ignore=rotate)
    assert not os.path.exists(os.path.join(rotated, f"ckpt-{best}.index"))
    choice = txl_tf.choose_checkpoint(rotated, f"ckpt-{best}")
    assert (choice.name, choice.step) == (f"ckpt-{best}", best)
    assert choice.path == os.path.join(rotated, "best", f"ckpt-{best}")


@pytest.mark.parametrize("runner, value, problem", [
    ("evaluate", "ckpt-999", "--checkpoint=ckpt-999: no such checkpoint in"),
    ("generate", "foo", "--checkpoint=foo: not a checkpoint name; give latest, best, ckpt-N"),
    ("export", "best", "--checkpoint=best: .* has no best/ directory"),
    ("evaluate", "best", "--checkpoint=best: .* has no best/ directory"),
])
def test_bad_checkpoint_values_are_one_error_line(run_dir, tmp_path, runner, value, problem):
    model, _, _ = run_dir
    if value == "best":  # a model directory without best/
        model = shutil.copytree(model, str(tmp_path / "nobest"),
                                ignore=shutil.ignore_patterns("best", "memory"))
    args = {"evaluate": EVAL, "generate": ["--prompt=def"],
            "export": [f"--export_dir={tmp_path / 'export'}"]}[runner]
    proc = run_runner(runner, [f"--model_dir={model}", f"--checkpoint={value}"] + args,
                      cwd=str(tmp_path))
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert re.search(problem, errors[0]), errors[0]
    assert "ckpt-" in errors[0]  # names the checkpoints there are
    assert not os.path.exists(tmp_path / "export")
