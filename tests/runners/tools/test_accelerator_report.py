"""The accelerator report end to end on this CPU with --smoke, in-process: the files and their
limits, every figure of every run, and every part that did not run listed with its reason."""
import importlib.util
import json
import os
import tarfile

import pytest

from runners.tools import accelerator_report as tool
from runners.tools.benchmarks.accelerator_report import output, recipes
from runners.tools.benchmarks.accelerator_report.rates import PRECISIONS
from runners.tools.benchmarks.configuration import FLAGS

RUN_FIELDS = ("compile_s", "step_s", "tokens_per_s", "mfu", "flops_per_step", "estimated_step_s",
              "measured_over_estimate", "peak_device_memory_bytes", "chooser_estimate_bytes",
              "losses", "grad_accum_steps", "streams_per_chunk")


# The recipes the report runs here: wt103_base, the profiled one with an adaptive softmax, in
# both precisions. enwik8_base (no cutoffs) runs in the replicas part; every recipe's smoke
# flags are checked in test_accelerator_report_parts.py.
RECIPES_RUN = ("wt103_base",)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The whole --smoke report, with the machine seen as one device: the replicas part runs
    in a child process that splits it (the CPU stands for a GPU), judged against the rate the
    parent measured."""
    from runners.tools.benchmarks.accelerator_report import schedule
    out = str(tmp_path_factory.mktemp("report") / "report")
    state = recipes.FlagState()
    real = schedule.machine
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(schedule, "machine", lambda: dict(real(), logical_devices=1))
            FLAGS(["accelerator_report", f"--out_dir={out}", "--smoke", "--budget_seconds=900",
                   f"--report_recipes={','.join(RECIPES_RUN)}"])
            tool.main(["accelerator_report"])
    finally:
        state.restore()
    with open(os.path.join(out, output.REPORT_JSON)) as f:
        return out, json.load(f)


def _skipped(record, text):
    return [s for s in record["budget"]["skipped"] if text in s["item"]]


def test_the_folder_fits_the_limits(report):
    out, record = report
    files = [os.path.join(root, n) for root, _, names in os.walk(out) for n in names]
    assert 2 <= len(files) <= output.MAX_FILES
    assert {os.path.basename(f) for f in files} <= set(output.OWN_FILES)
    assert all(os.path.getsize(f) <= output.MAX_FILE_BYTES for f in files)
    assert all(os.path.dirname(f) == out for f in files)
    assert record["limits"]["fits"] and record["limits"]["files"] == len(files)


def test_every_recipe_runs_in_both_precisions_or_is_listed_as_skipped(report):
    _, record = report
    runs = {r["name"]: r for r in record["runs"]}
    assert tuple(record["options"]["recipes"]) == RECIPES_RUN
    for recipe in RECIPES_RUN:
        for precision in PRECISIONS:
            name = f"{recipe} {precision}"
            if name not in runs:
                assert _skipped(record, name), name
                continue
            run = runs[name]
            assert all(field in run for field in RUN_FIELDS), name
            assert run["precision"] == precision and run["replicas"] == 1
            assert "stand-in" in run["data"] and run["n_token"] <= recipes.SMOKE_VOCABULARY
            assert run["steps_timed"] >= 1 and run["compile_s"] > 0
            assert run["tokens_per_s"] == pytest.approx(
                run["global_batch"] * run["tgt_len"] / run["step_s"])
            rate = record["rates"]["tensorflow"][precision]["flops_per_second"]
            assert run["matmul_rate"] == rate
            assert run["mfu"] == pytest.approx(run["flops_per_step"] / run["step_s"] / rate)
            assert run["measured_over_estimate"] == pytest.approx(
                run["step_s"] / run["estimated_step_s"])
            assert run["estimated_step_s"] == pytest.approx(run["flops_per_step"] / rate)
            assert run["peak_device_memory_bytes"] is None  # a CPU: no allocator figure...
            assert run["peak_device_memory_reason"]          # ...and why
            assert run["chooser_estimate_bytes"] > 0
            assert len(run["losses"]) == run["steps_timed"] + 1  # the compiling step's too


def test_rates_in_both_precisions_and_the_torch_cross_check_or_why_not(report):
    _, record = report
    for precision in PRECISIONS:
        assert record["rates"]["tensorflow"][precision]["flops_per_second"] > 0
    assert record["rates"]["tensorflow"]["mixed_bfloat16"]["dtype"] == "bfloat16"
    if importlib.util.find_spec("torch") is None:
        assert record["rates"]["torch"] is None
        assert _skipped(record, "PyTorch cross-check")
    else:
        assert set(record["rates"]["torch"]) == set(PRECISIONS)


def test_one_device_runs_the_replicas_in_a_child_that_splits_it(report):
    """One device: the replicas part runs in a child process that splits it in two before its
    TensorFlow starts; one and two replicas give the same losses."""
    _, record = report
    assert record["machine"]["logical_devices"] == 1
    assert not [s for s in record["budget"]["skipped"] if s["part"] == "replicas"], record
    replicas = record["replicas"]
    assert replicas["devices"] == ["/CPU:0", "/CPU:1"] and replicas["physical_devices"] == 1
    assert replicas["steps_compared"] >= 2 and replicas["max_abs_loss_difference"] < 1e-3
    runs = [r for r in record["runs"] if "replica" in r["name"]]
    assert sorted(r["replicas"] for r in runs) == [1, 2]
    names = [r["name"] for r in runs if r["replicas"] == 2]
    assert len(names) == 1 and "2 replicas" in names[0]
    rate = record["rates"]["tensorflow"]["float32"]["flops_per_second"]
    for run in runs:  # judged against the parent's rate, passed to the child
        assert run["matmul_rate"] == rate
        assert run["mfu"] == pytest.approx(run["flops_per_step"] / run["step_s"] / rate)


def test_the_peer_runs_or_is_listed_as_skipped(report):
    _, record = report
    if importlib.util.find_spec("transformers") is None:
        assert record["peer"] is None
        assert any("transformers" in s["reason"] for s in _skipped(record, "Hugging Face"))
    else:
        for precision, peer in record["peer"].items():
            assert peer["train_speedup_vs_huggingface"] > 0, precision


def test_the_profiles_hold_only_traces_tensorboard_reads(report):
    out, record = report
    profiles = record["profiles"]
    if profiles["file"] is None:
        assert profiles["left_out"] or _skipped(record, "profile")
        return
    with tarfile.open(os.path.join(out, profiles["file"])) as tar:
        names = tar.getnames()
    assert names and all(n.endswith(".xplane.pb") for n in names)
    assert {n.split("/")[0] for n in names} == set(profiles["traces"]) <= set(PRECISIONS)
    assert all(n.split("/")[1:3] == ["plugins", "profile"] for n in names)


def test_the_process_keeps_its_flags_and_dtype_policy(report):
    import keras
    assert keras.config.dtype_policy().name == "float32"
    assert FLAGS.precision == "float32" and FLAGS.n_layer != recipes.SMOKE_SHAPES["n_layer"]
    assert FLAGS["report_recipes"].value == list(recipes.RECIPES)  # the default: all of them


def test_the_markdown_has_a_row_per_run_and_every_skipped_item(report):
    out, record = report
    with open(os.path.join(out, output.REPORT_MD)) as f:
        text = f.read()
    assert "| run | compile s | s/step | tokens/s | MFU |" in text
    for run in record["runs"]:
        assert f"| {run['name']} |" in text
    for skipped in record["budget"]["skipped"]:
        assert f"- {skipped['part']}: {skipped['item']}: {skipped['reason']}" in text
    assert set(record["budget"]["parts"]) == {"rates", "recipes", "replicas", "peer"}
