"""The accelerator report's pieces that need no training: the budget's deadlines, the folder
checks and limits, the profile archive, the recipes' flags and the command line's checks."""
import importlib.util
import itertools
import os
import tarfile

import pytest
from absl import app

from runners.tools import accelerator_report as tool
from runners.tools.benchmarks.accelerator_report import output, recipes
from runners.tools.benchmarks.accelerator_report.budget import RESERVE_SHARE, Budget, too_late
from runners.tools.benchmarks.configuration import FLAGS


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("seconds,used", [(480, (0.0, 0.0, 0.0)), (480, (5.0, 300.0, 1.0)),
                                          (60, (1.0, 2.0, 30.0)), (10, (20.0, 0.0, 0.0))])
def test_each_part_gets_its_share_plus_what_earlier_parts_left_never_past_the_end(seconds, used):
    shares = {"a": 0.2, "b": 0.5, "c": 0.3}
    clock = FakeClock()
    budget = Budget(seconds, shares, clock)
    end = clock.now + seconds * (1 - RESERVE_SHARE)
    planned = clock.now
    for (name, share), spend in zip(shares.items(), used):
        with budget.part(name) as part:
            planned = min(end, planned + share * seconds)
            assert part.deadline == pytest.approx(planned)
            assert part.deadline <= end + 1e-9
            clock.now += spend
    for (name, _), spend in zip(shares.items(), used):
        assert budget.parts[name]["seconds"] == pytest.approx(spend)
    summary = budget.summary()
    assert summary["elapsed_seconds"] == pytest.approx(sum(used))
    assert summary["budget_seconds"] == seconds


def test_a_part_lists_what_it_skipped_and_shares_its_time_between_items():
    clock = FakeClock()
    budget = Budget(100, {"a": 0.5}, clock)
    with budget.part("a") as part:
        for items in (4, 2, 1):
            assert part.slot(items) - clock.now == pytest.approx(part.left() / items)
        assert too_late(part, part.left() - 1) is None
        reason = too_late(part, part.left() + 1)
        part.skip("thing", reason)
        clock.now = part.deadline + 3
        assert part.slot(3) == pytest.approx(clock.now)  # nothing left to share
    assert budget.skipped == [{"part": "a", "item": "thing", "reason": reason}]
    assert budget.parts["a"]["late_seconds"] == pytest.approx(3)


def test_the_out_dir_must_be_new_empty_or_an_earlier_report(tmp_path):
    output.check_out_dir(str(tmp_path / "new"))
    output.check_out_dir(str(tmp_path))
    for name in output.OWN_FILES:
        (tmp_path / name).write_text("x")
    output.check_out_dir(str(tmp_path))
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(output.OutDirError, match="notes.txt") as error:
        output.check_out_dir(str(tmp_path))
    assert "\n" not in str(error.value)
    with pytest.raises(output.OutDirError, match="is a file"):
        output.check_out_dir(str(tmp_path / "notes.txt"))


@pytest.mark.parametrize("files,depth", list(itertools.product((1, 8, 9), (0, 2, 3))))
def test_limits_count_files_and_depth(tmp_path, files, depth):
    folder = tmp_path.joinpath(*[f"d{i}" for i in range(depth)])
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (folder / f"f{i}").write_bytes(b"x" * (i + 1))
    got = output.limits(str(tmp_path))
    assert (got["files"], got["depth"], got["largest_bytes"]) == (files, depth, files)
    assert got["fits"] == (files <= output.MAX_FILES and depth <= output.MAX_DEPTH)


def _trace(logdir, size):
    path = os.path.join(logdir, "plugins", "profile", "2026_11_27", "host.xplane.pb")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(os.urandom(size))  # random bytes: gzip cannot shrink them
    with open(os.path.join(os.path.dirname(path), "host.trace.json.gz"), "wb") as f:
        f.write(b"not needed")


def test_profiles_pack_only_traces_and_leave_out_the_largest_past_the_limit(tmp_path,
                                                                          monkeypatch):
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir(), work.mkdir()
    sizes = {"float32": 30_000, "mixed_bfloat16": 10_000, "none": 0}
    logdirs = {}
    for name, size in sizes.items():
        logdirs[name] = str(tmp_path / name)
        if size:
            _trace(logdirs[name], size)
    monkeypatch.setattr(output, "MAX_FILE_BYTES", 25_000)
    packed = output.pack_profiles(logdirs, str(out), str(work))
    assert packed["traces"] == ["mixed_bfloat16"]
    assert any(r.startswith("float32:") for r in packed["left_out"])
    assert any(r.startswith("none:") for r in packed["left_out"])
    assert os.listdir(out) == [output.PROFILES]
    with tarfile.open(out / output.PROFILES) as tar:
        names = tar.getnames()
    assert names == ["mixed_bfloat16/plugins/profile/2026_11_27/host.xplane.pb"]
    assert packed["bytes"] == os.path.getsize(out / output.PROFILES) <= 25_000


@pytest.fixture
def restored_flags():
    state = recipes.FlagState()
    yield
    state.restore()


@pytest.mark.parametrize("recipe", recipes.RECIPES)
@pytest.mark.parametrize("smoke", [False, True])
def test_a_recipe_sets_its_flags_vocabulary_and_global_batch(recipe, smoke, restored_flags):
    source = recipes.apply_recipe(recipe, "mixed_bfloat16", ("--dropout=0.0",), smoke)
    written = dict(a.lstrip("-").split("=", 1) for a in FLAGS.read_flags_from_files(
        [f"--flagfile={recipes.flagfile(recipe)}"], force_gnu=True))
    vocab, expected_source = recipes.vocabulary(written["dataset"], written["data_dir"])
    assert FLAGS.precision == "mixed_bfloat16" and FLAGS.dropout == 0.0
    assert FLAGS.batch_size == FLAGS.train_batch_size
    if not smoke:
        assert (FLAGS.n_token, FLAGS.n_layer, FLAGS.train_batch_size) == (
            vocab, int(written["n_layer"]), int(written["train_batch_size"]))
        assert FLAGS.cutoffs == written["cutoffs"] and source == expected_source
        return
    assert FLAGS.n_token == min(vocab, recipes.SMOKE_VOCABULARY)
    assert FLAGS.n_layer == recipes.SMOKE_SHAPES["n_layer"]
    if written["cutoffs"] != "none":
        cutoffs = [int(c) for c in FLAGS.cutoffs.split(",")]
        assert cutoffs == sorted(set(cutoffs)) and 0 < cutoffs[0] and cutoffs[-1] < FLAGS.n_token
    recipes.model_config()  # a valid configuration


def test_the_vocabulary_of_a_prepared_corpus_wins_and_a_bad_one_falls_back(tmp_path):
    import json
    (tmp_path / "corpus-info.json").write_text(json.dumps(
        {"dataset": "enwik8", "level": "byte", "vocab_size": 205}))
    size, source = recipes.vocabulary("enwik8", str(tmp_path))
    assert size == 205 and str(tmp_path) in source
    (tmp_path / "corpus-info.json").write_text("{not json")
    stand_in = (recipes.PAPER_VOCABULARY["enwik8"],
                "stand-in: random tokens of enwik8's vocabulary")
    assert recipes.vocabulary("enwik8", str(tmp_path)) == stand_in
    assert recipes.vocabulary("enwik8", str(tmp_path / "absent")) == stand_in


@pytest.mark.parametrize("flag,value", [("budget_seconds", 0.0), ("budget_seconds", -5.0),
                                        ("report_max_steps", 0), ("report_recipes", []),
                                        ("report_recipes", ["wt103_base", "ptb"]),
                                        ("report_recipes", ["eval_enwik8"]),
                                        ("replica_recipe", "nope"), ("profile_recipe", "lm1b"),
                                        ("profile_recipe", "default")])
def test_bad_values_are_one_usage_line(flag, value, restored_flags):
    FLAGS(["accelerator_report", "--out_dir=/tmp/x"])
    setattr(FLAGS, flag, value)
    with pytest.raises(app.UsageError) as error:
        tool.options_from_flags(["accelerator_report"])
    assert "\n" not in str(error.value) and f"--{flag}" in str(error.value)


def test_command_line_training_flags_become_every_runs_overrides(restored_flags):
    FLAGS(["accelerator_report", "--out_dir=/tmp/x", "--smoke", "--jit_compile=true",
           "--max_per_replica_batch=2"])
    options = tool.options_from_flags(["accelerator_report"])
    assert set(options.overrides) == {"--jit_compile=true", "--max_per_replica_batch=2"}
    assert options.smoke and set(options.parts) == {"rates", "recipes", "replicas", "peer"}


def test_a_budget_too_small_for_anything_lists_every_part_and_run_it_skipped(tmp_path):
    from runners.tools.benchmarks.accelerator_report import schedule
    from runners.tools.benchmarks.accelerator_report.rates import PRECISIONS
    out = tmp_path / "report"
    ticks = itertools.count(step=1.0)  # every look at the clock finds a second gone
    record = schedule.run_report(schedule.ReportOptions(out_dir=str(out), budget_seconds=0.01,
                                                        smoke=True), clock=lambda: next(ticks))
    items = {(s["part"], s["item"]) for s in record["budget"]["skipped"]}
    assert ("rates", "matmul rates") in items
    assert ("replicas", "one and two replicas") in items
    assert any(part == "peer" for part, _ in items)
    for recipe in recipes.RECIPES:
        for precision in PRECISIONS:
            assert ("recipes", f"{recipe} {precision}") in items
    assert record["runs"] == [] and record["rates"] is None
    assert sorted(os.listdir(out)) == [output.REPORT_JSON, output.REPORT_MD]
    assert record["limits"]["fits"]
    text = (out / output.REPORT_MD).read_text()
    assert text.count("\n- ") >= len(items)


@pytest.mark.parametrize("kind", ["CPU", "GPU"])
def test_the_peer_runs_the_benchmark_on_the_nvidia_shape_in_both_precisions(tmp_path, monkeypatch,
                                                                            kind):
    """The peer part drives the benchmark's interleaved comparison (faked here: it needs torch
    and transformers) with the NVIDIA shape, the peer on the same device, this Python."""
    import sys
    from runners.tools.benchmarks.accelerator_report import peer, schedule
    seen = []

    def fake_benchmark():
        seen.append({name: FLAGS[name].value for name in (
            "precision", "hf_precision", "hf_device", "hf_python", "d_model", "tgt_len",
            "mem_len", "batch_size", "n_token", "cutoffs", "compare_huggingface",
            "measure_memory", "strategy")})
        speed = {"train_tokens_per_s": 200.0, "eval_tokens_per_s": 400.0}
        return dict(speed, train_speedup_vs_huggingface=2.0, eval_speedup_vs_huggingface=2.5,
                    huggingface=dict(speed, precision=FLAGS.hf_precision, device=FLAGS.hf_device))

    real = schedule.machine
    monkeypatch.setattr(schedule, "machine", lambda: dict(real(), kind=kind))
    monkeypatch.setattr(peer, "missing", lambda: None)
    monkeypatch.setattr(peer, "run_benchmark", fake_benchmark)
    record = schedule.run_report(schedule.ReportOptions(out_dir=str(tmp_path / "r"),
                                                        budget_seconds=600, parts=("peer",)))
    assert [s["precision"] for s in seen] == ["float32", "mixed_bfloat16"]
    assert [s["hf_precision"] for s in seen] == ["float32", "bfloat16"]
    for s in seen:
        assert s["hf_device"] == ("cuda" if kind == "GPU" else "cpu")
        assert s["hf_python"] == sys.executable and s["compare_huggingface"]
        assert not s["measure_memory"] and s["strategy"] == "one_device"
        assert (s["d_model"], s["tgt_len"], s["mem_len"], s["batch_size"]) == (
            peer.NVIDIA_SHAPE["d_model"], peer.NVIDIA_SHAPE["tgt_len"],
            peer.NVIDIA_SHAPE["mem_len"], peer.NVIDIA_SHAPE["train_batch_size"])
        assert s["n_token"] == recipes.PAPER_VOCABULARY["wt103"]
        assert s["cutoffs"] == "20000,40000,200000"
    assert set(record["peer"]) == {"float32", "mixed_bfloat16"}
    text = (tmp_path / "r" / output.REPORT_MD).read_text()
    assert "train 2.00x" in text and "eval 2.50x" in text
    assert FLAGS.compare_huggingface is False  # the process's flags are put back


def test_an_out_dir_holding_other_files_is_one_usage_line_and_stays_as_it_was(tmp_path,
                                                                              restored_flags):
    (tmp_path / "mine.txt").write_text("keep")
    FLAGS(["accelerator_report", f"--out_dir={tmp_path}", "--smoke"])
    with pytest.raises(app.UsageError, match="mine.txt") as error:
        tool.main(["accelerator_report"])
    assert "\n" not in str(error.value)
    assert os.listdir(tmp_path) == ["mine.txt"] and (tmp_path / "mine.txt").read_text() == "keep"


def test_a_missing_or_unreadable_trace_has_no_top_ops(tmp_path):
    from runners.tools.benchmarks.accelerator_report import schedule
    assert schedule._top_op_types(str(tmp_path / "none")) == []
    path = tmp_path / "bad" / "plugins" / "profile" / "run"
    path.mkdir(parents=True)
    (path / "host.xplane.pb").write_bytes(b"\xff" * 64)
    assert schedule._top_op_types(str(tmp_path / "bad")) == []


def test_every_training_recipe_of_runners_is_accepted_or_refused_in_one_line(tmp_path):
    """The class: each runners/*.flags recipe runs when its vocabulary is known (a paper
    corpus, or a prepared one), and is refused in one line naming the fix otherwise."""
    names = recipes.training_recipes()
    assert set(recipes.RECIPES) <= set(names) and not any(n.startswith("eval_") for n in names)
    for name in names:
        dataset = recipes._written(name).get("dataset")
        if dataset in recipes.PAPER_VOCABULARY:
            recipes.check_recipe(name)
            continue
        with pytest.raises(recipes.RecipeError) as error:
            recipes.check_recipe(name)
        assert "\n" not in str(error.value) and "prepare" in str(error.value), name


def _fake_torch_child(tmp_path, monkeypatch, body):
    """`rates.torch_rates` with torch 'importable' and its child replaced by a script."""
    from runners.tools.benchmarks.accelerator_report import rates
    script = tmp_path / "torch_child.py"
    script.write_text(body)
    real = importlib.util.find_spec
    monkeypatch.setattr(rates.importlib.util, "find_spec",
                        lambda name, *a: object() if name == "torch" else real(name, *a))
    monkeypatch.setattr(rates, "TORCH_RATE", str(script))
    return rates


def test_pytorchs_rate_comes_from_a_child_process_and_its_failure_is_one_line(tmp_path,
                                                                                monkeypatch):
    # PyTorch and TensorFlow in one process died with SIGFPE on an H200: the child is the fix.
    rates = _fake_torch_child(tmp_path, monkeypatch, (
        "import json, sys\n"
        "sizes, device, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])\n"
        "print('noise first')\n"
        "print(json.dumps({p: {'flops_per_second': s * n, 'device': device}\n"
        "                  for p, s in sizes.items()}))\n"))
    got = rates.torch_rates({"float32": 64, "mixed_bfloat16": 128}, True, 3)
    assert got == {"float32": {"flops_per_second": 192, "device": "cuda"},
                   "mixed_bfloat16": {"flops_per_second": 384, "device": "cuda"}}
    rates = _fake_torch_child(tmp_path, monkeypatch, (
        "import sys\nsys.stderr.write('Traceback ...\\nRuntimeError: CUDA error: no kernel\\n')\n"
        "sys.exit(7)\n"))
    with pytest.raises(RuntimeError) as raised:
        rates.torch_rates({"float32": 64, "mixed_bfloat16": 64}, False, 2)
    assert str(raised.value) == "PyTorch's child exited with 7: RuntimeError: CUDA error: no kernel"


def test_the_pytorch_child_imports_neither_tensorflow_nor_txl_tf():
    import ast
    from runners.tools.benchmarks.accelerator_report import rates
    tree = ast.parse(open(rates.TORCH_RATE).read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else
                              [ast.alias(node.module or "")])}
    assert imported == {"json", "sys", "time", "torch"}
