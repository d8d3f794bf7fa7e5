"""Every runner (and every runners/tools/ program with flags): a number outside its declared range
ends the program with exit code 2 and one line naming the flag and its range, before any work:
nothing is written into the directories it was given. The runners run in this process
(`runner_calls.call_runner`: their flag parsing, main and `sys.exit`); the tools, which define
their flags as their modules are imported, in one process of their own started as a user's
shell starts it (`TOOLS_ONE_BY_ONE`: each tool run as `__main__` with the flags and modules of
runners/ defined afresh, its exit code, and its lines of the process's real stderr, on which
TensorFlow's C++ start-up lines would show). The ranges themselves are tested in-process
(tests/runners/cli/test_flag_ranges.py)."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from runner_calls import REPO, call_runner, user_env

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


TOOLS = sorted(p for p in PROGRAMS if p.startswith("runners/tools/"))
SEPARATOR = "--- next tool ---"
# Runs each tool of argv[1] ([[path, argv, cwd], ...]) as `__main__`, as `python path argv` in
# cwd would: the flags that modules of runners/ defined (`runner_calls.set_aside_runner_flags`)
# and those modules are dropped first, so
# that the tool defines its flags anew. Prints SEPARATOR to stderr after each tool and the exit
# codes as one JSON line to stdout.
TOOLS_ONE_BY_ONE = textwrap.dedent("""
    import json, os, runpy, sys
    from absl import flags
    from runner_calls import set_aside_runner_flags
    codes = []
    for path, argv, cwd in json.loads(sys.argv[1]):
        fv = flags.FLAGS
        set_aside_runner_flags(fv)
        fv.unparse_flags()
        for name in [m for m in sys.modules if m.split(".")[0] == "runners"]:
            del sys.modules[name]
        sys.argv = [path] + argv
        os.chdir(cwd)
        try:
            runpy.run_path(path, run_name="__main__")
            codes.append(0)
        except SystemExit as stop:
            codes.append(stop.code if isinstance(stop.code, int) else repr(stop.code))
        sys.stdout.flush()
        print(SEPARATOR, file=sys.stderr, flush=True)
    print(json.dumps(codes))
""").replace("SEPARATOR", repr(SEPARATOR))


def tools_one_by_one(tmp_path):
    """[(tool, CompletedProcess of its part: exit code, stdout, stderr, its directory)]: every
    tool of PROGRAMS given its number out of range, one by one in one process."""
    runs = []
    for program in TOOLS:
        args, flag, value = PROGRAMS[program]
        tmp = tmp_path / os.path.basename(program).removesuffix(".py")
        tmp.mkdir()
        runs.append([os.path.join(REPO, program),
                     [a.format(tmp=tmp) for a in args] + [f"{flag}={value}"], str(tmp)])
    proc = subprocess.run([sys.executable, "-c", TOOLS_ONE_BY_ONE, json.dumps(runs)],
                          capture_output=True, text=True, cwd=REPO,
                          env=user_env(PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}"),
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    parts = proc.stderr.split(SEPARATOR + "\n")
    assert len(codes) == len(TOOLS) and parts[-1] == "", proc.stderr
    return [(program, subprocess.CompletedProcess(run[:2], code, "", stderr), run[2])
            for program, run, code, stderr in zip(TOOLS, runs, codes, parts)]


def run_program(program, args, cwd):
    """`python <program> args` (program: "runners/<name>.py") of a runner, in this process."""
    return call_runner(program.removeprefix("runners/").removesuffix(".py"), args, cwd=cwd)


def assert_refused_before_any_work(result, flag, directory):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert re.match(rf"error: {flag} must be an? [\w ]+ in [\[(].*, got ", lines[0]), lines[0]
    assert os.listdir(directory) == [], os.listdir(directory)  # nothing written


@pytest.mark.parametrize("program", sorted(set(PROGRAMS) - set(TOOLS)))
def test_a_number_out_of_range_is_refused_before_any_work(program, tmp_path):
    args, flag, value = PROGRAMS[program]
    argv = [a.format(tmp=tmp_path) for a in args] + [f"{flag}={value}"]
    assert_refused_before_any_work(run_program(program, argv, cwd=tmp_path), flag, tmp_path)


def test_a_number_out_of_range_is_refused_before_any_work_by_every_tool(tmp_path):
    """The tools under runners/tools/, one by one in one process (`TOOLS_ONE_BY_ONE`)."""
    refused = tools_one_by_one(tmp_path)
    assert [program for program, _, _ in refused] == TOOLS and len(TOOLS) == 4
    for program, result, directory in refused:
        assert_refused_before_any_work(result, PROGRAMS[program][1], directory)


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
