"""Every runner (and every runners/tools/ program with flags): a number outside its declared range
ends the program with exit code 2 and one line naming the flag and its range, before any work:
nothing is written into the directories it was given. The runners run in this process
(`runner_calls.call_runner`: their flag parsing, main and `sys.exit`); the tools, which define
their flags as their modules are imported, each in a process of its own. The ranges themselves
are tested in-process (tests/runners/cli/test_flag_ranges.py)."""
import os
import re

import pytest

from runner_calls import call_runner, run_runner

# program -> (arguments, with {tmp} for a fresh directory, the flag given out of its range)
PROGRAMS = {
    "runners/train.py": (["--model_dir={tmp}/model", "--data_dir={tmp}/data"], "--tgt_len",
                         "-3"),
    "runners/evaluate.py": (["--model_dir={tmp}/model"], "--batch_size", "0"),
    "runners/generate.py": (["--model_dir={tmp}/model", "--prompt=a"], "--seg_len", "-1"),
    "runners/export.py": (["--model_dir={tmp}/model", "--export_dir={tmp}/export"],
                          "--max_seq_len", "3000000000"),
    "runners/prepare_data.py": (["--data_dir={tmp}/data", "--dataset=synthetic"],
                                "--num_symbols", "2147483647"),
    "runners/import_weights.py": (["--source=tf1", "--checkpoint={tmp}/ckpt",
                                   "--model_dir={tmp}/model"], "--dropout", "nan"),
    "runners/recl.py": (["--model_dirs={tmp}/model", "--data_dir={tmp}/data"],
                        "--threshold", "1.5"),
    "runners/ablation.py": (["--root={tmp}/root", "--data_dir={tmp}/data"], "--eval_rows", "0"),
    "runners/tools/benchmark.py": (["--model_dir={tmp}/model"], "--tgt_len", "0"),
    "runners/tools/benchmark_data.py": (["--work_dir={tmp}/work"], "--megabytes", "-5"),
    "runners/tools/benchmark_inference.py": ([], "--d_model", "1000000000000"),
    "runners/tools/benchmark_profile.py": (["--logdir={tmp}/profile"], "--top", "0"),
}


def run_program(program, args, cwd):
    """`python <program> args` (program: "runners/<name>.py"): a runner in this process, a tool
    in a process of its own."""
    name = program.removeprefix("runners/").removesuffix(".py")
    call = run_runner if name.startswith("tools/") else call_runner
    return call(name, args, cwd=cwd)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_a_number_out_of_range_is_refused_before_any_work(program, tmp_path):
    args, flag, value = PROGRAMS[program]
    argv = [a.format(tmp=tmp_path) for a in args] + [f"{flag}={value}"]
    result = run_program(program, argv, cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert re.match(rf"error: {flag} must be an? [\w ]+ in [\[(].*, got ", lines[0]), lines[0]
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)  # nothing written


@pytest.mark.parametrize("program,args", [
    ("runners/generate.py", ["--prompt=a"]),
    ("runners/evaluate.py", ["--text_file={tmp}/text.txt", "--tb_dir="]),
])
def test_a_hostile_d_model_in_config_json_is_named_before_any_work(program, args, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"n_token": 50, "n_layer": 2, "d_model": 1000000000, '
                                       '"n_head": 2, "d_head": 8, "d_inner": 16}')
    (tmp_path / "text.txt").write_text("some text\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = run_program(program, [f"--model_dir={model}",
                                   *[a.format(tmp=tmp_path) for a in args]], cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert re.search(r"weights alone need .*config.json sets them: lower d_model\.$", lines[0])
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
