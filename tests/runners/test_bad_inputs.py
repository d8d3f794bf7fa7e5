"""Bad inputs to the runners: `runners/<name>.py ...` with the flags a user types.

Each case asserts the exit code (2 usage error, 1 runtime failure; runners/cli/__init__.py), that stderr
names the problem in one `error: ...` line, that there is no traceback, and that nothing already
written changed: the shared model and data directories are compared byte for byte before and
after every case, and an output path a refused run was pointed at must not exist afterwards.
The cases run the runner in this process (`runner_calls.call_runner`: the same flag checks, main
and exit code); the cases of `IN_A_PROCESS` and the tests that need a process of their own (a
mount namespace, an address-space limit) run it as a user does, without TF_CPP_MIN_LOG_LEVEL in
the environment, so they also check the quiet start.
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from runner_calls import REPO, call_runner, run_runner, user_env
from shared_dirs import writable_copy
from tiny import TRAIN_FLAGS

TINY = TRAIN_FLAGS + ["--per_host_train_bsz=4"]
# TensorFlow's C++ start-up lines that runners/cli/__init__.py keeps off the console.
START_UP_NOISE = ("absl::InitializeLog", "oneDNN", "cuda", "cuInit", "cpu_feature_guard")
HF_CONFIG = ('{"vocab_size": 20, "n_layer": 2, "d_model": 16, "d_embed": 16, "n_head": 2, '
             '"d_head": 8, "d_inner": 32, "cutoffs": [], "div_val": 1}')


def snapshot(*dirs):
    """{path: sha256 of the bytes} of every file under `dirs`."""
    out = {}
    for top in dirs:
        for root, _, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    out[path] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory, trained_byte_model):
    """The run's shared tiny trained model directory and its data directory (read-only;
    conftest's `trained_byte_model`: the builtin text, TINY, 4 steps), and bad input files."""
    root = tmp_path_factory.mktemp("bad_inputs")
    model, data = trained_byte_model["model"], trained_byte_model["data"]
    files = {
        "a_file": b"not a directory\n",
        "empty.txt": b"",
        "text.txt": b"The quick brown fox jumps over the lazy dog. " * 20,
        "latin1.txt": "caf\u00e9 na\u00efve".encode("latin-1"),
        "garbage.json": b"this is { not json",
        "list.json": b"[1, 2, 3]",
    }
    for name, content in files.items():
        (root / name).write_bytes(content)
    hf = {  # Hugging Face directories, each broken in one way
        "hf_not_json": {"config.json": b"not json{"},
        "hf_bert": {"config.json": b'{"model_type": "bert", "hidden_size": 768}'},
        "hf_garbage_safetensors": {"config.json": HF_CONFIG.encode(),
                                   "model.safetensors": os.urandom(300)},
        "hf_list_header": {"config.json": HF_CONFIG.encode(),
                           "model.safetensors": struct.pack("<Q", 16) + b'["a", "b", "c"] '},
        "hf_bad_entry": {"config.json": HF_CONFIG.encode(),
                         "model.safetensors": struct.pack("<Q", 24) + b'{"w": {"dtype": "F32"}}'
                         + b" "},
        "hf_garbage_h5": {"config.json": HF_CONFIG.encode(), "tf_model.h5": os.urandom(300)},
        "hf_no_weights": {"config.json": HF_CONFIG.encode()},
    }
    for directory, contents in hf.items():
        (root / directory).mkdir()
        for name, content in contents.items():
            (root / directory / name).write_bytes(content)
    flagfiles = {"self.flags": f"--flagfile={root}/self.flags\n--train_steps=1\n",
                 "loop_a.flags": f"--flagfile={root}/loop_b.flags\n",
                 "loop_b.flags": f"# a comment\n--flagfile={root}/loop_a.flags\n"}
    for name, text in flagfiles.items():
        (root / name).write_text(text)
    (root / "latin1.flags").write_bytes("--prompt=caf\u00e9\n".encode("latin-1"))
    _damaged_copies(root, model, data)
    return {"root": str(root), "model": model, "data": data}


def _damaged_copies(root, model, data):
    """Copies of the model and data directories, each changed in one way: config.json of one
    layer for a checkpoint of two, config.json not UTF-8, a record info edited by hand."""
    for name in ("model_1layer", "model_latin1_config"):
        writable_copy(model, root / name)
    config = json.loads((root / "model_1layer" / "config.json").read_text())
    assert config["n_layer"] == 2, config
    (root / "model_1layer" / "config.json").write_text(json.dumps(dict(config, n_layer=1)))
    (root / "model_latin1_config" / "config.json").write_bytes(
        b'{"n_token": 256, "d_model": 32, "caf\xe9": 1}')
    writable_copy(data, root / "data_edited")
    info = [n for n in os.listdir(root / "data_edited")
            if n.startswith("record_info-valid.bsz-4.")][0]
    meta = json.loads((root / "data_edited" / info).read_text())
    meta["num_steps"] -= 1  # a plausible edit: evaluate fewer steps
    (root / "data_edited" / info).write_text(json.dumps(meta))


# (id, runner, args, exit code, regex the error line must match). In args, {model} and {data}
# are the shared directories, {root} their parent (bad files), {new} a path that must stay absent.
CASES = [
    # Paths and flags of train.py.
    ("train_model_dir_is_file", "train", ["--model_dir={root}/a_file", "--data_dir={data}"],
     2, r"--model_dir=.*a_file is a file, not a directory"),
    ("train_data_dir_is_file", "train", ["--model_dir={new}", "--data_dir={root}/a_file"],
     2, r"--data_dir=.*a_file is a file, not a directory"),
    ("train_impossible_mem_len", "train",
     TINY + ["--mem_len=1000000000", "--model_dir={new}", "--data_dir={data}",
             "--corpus_option=max_bytes=20000"],
     2, r"out of memory before the first step: .*mem_len 1000000000.*GiB.*lower mem_len"),
    ("train_missing_device", "train",
     TINY + ["--strategy=one_device", "--devices=/GPU:7", "--model_dir={new}",
             "--data_dir={data}", "--corpus_option=max_bytes=20000"],
     2, r"device /GPU:7 not found; this machine has /CPU:0"),
    ("train_unknown_flag", "train", ["--model_dir={new}", "--no_such_flag=1"],
     2, r"no_such_flag"),
    ("train_bad_integer", "train", ["--model_dir={new}", "--train_steps=many"],
     2, r"train_steps"),
    ("train_missing_raw_path", "train",
     ["--model_dir={new}", "--data_dir={new}", "--raw_path={root}/no_such_archive.zip"],
     2, r"--raw_path=.*no_such_archive.zip does not exist"),
    # evaluate.py
    ("evaluate_model_dir_is_file", "evaluate", ["--model_dir={root}/a_file",
                                                "--text_file={root}/text.txt"],
     2, r"--model_dir=.*a_file is a file"),
    ("evaluate_missing_model_dir", "evaluate", ["--model_dir={new}",
                                                "--text_file={root}/text.txt"],
     2, r"not a txl-tf model directory"),
    ("evaluate_empty_text", "evaluate", ["--model_dir={model}", "--text_file={root}/empty.txt"],
     2, r"--text_file=.*empty.txt is empty"),
    ("evaluate_missing_text", "evaluate", ["--model_dir={model}", "--text_file={new}"],
     2, r"--text_file=.* does not exist"),
    ("evaluate_impossible_mem_len", "evaluate",
     ["--model_dir={model}", "--text_file={root}/text.txt", "--mem_len=1000000000",
      "--batch_size=1", "--tb_dir={new}"],
     2, r"out of memory before the first step: .*mem_len 1000000000.*GiB"),
    ("evaluate_two_sources", "evaluate", ["--model_dir={model}", "--data_dir={data}",
                                          "--text_file={root}/text.txt"],
     2, r"give one of --data_dir \(with --split\) or --text_file, not both"),
    ("evaluate_missing_data_dir", "evaluate", ["--model_dir={model}", "--data_dir={new}"],
     2, r"--data_dir=.* does not exist"),
    ("evaluate_missing_checkpoint", "evaluate", ["--model_dir={model}",
                                                 "--text_file={root}/text.txt",
                                                 "--checkpoint={model}/ckpt-999"],
     2, r"--checkpoint=.*ckpt-999: no such checkpoint"),
    ("evaluate_zero_batch", "evaluate", ["--model_dir={model}", "--text_file={root}/text.txt",
                                         "--batch_size=0"],
     2, r"--batch_size must be an integer in \[1, 1048576\] \(streams\), got 0"),
    # generate.py
    ("generate_missing_vocab_file", "generate", ["--model_dir={model}", "--prompt=hi",
                                                 "--vocab_file={new}"],
     2, r"--vocab_file=.* does not exist"),
    ("generate_negative_num_tokens", "generate", ["--model_dir={model}", "--prompt=hi",
                                                  "--num_tokens=-1"],
     2, r"--num_tokens must be an integer in \[0, 1000000\] .*got -1"),
    ("generate_model_dir_is_file", "generate", ["--model_dir={root}/a_file", "--prompt=hi"],
     2, r"--model_dir=.*a_file is a file"),
    ("generate_prompt_not_utf8", "generate", ["--model_dir={model}",
                                              "--prompt_file={root}/latin1.txt"],
     2, r"--prompt_file=.*latin1.txt is not UTF-8 text \(byte 0xe9 at offset 3\)"),
    ("generate_mem_len_zero", "generate", ["--model_dir={model}", "--prompt=hi", "--mem_len=0"],
     2, r"--mem_len must be an integer in \[1, 2147483647\] \(generation keeps the context "
        r"in the memory; mem_len >= 1\), got 0"),
    ("generate_missing_prompt_file", "generate", ["--model_dir={model}",
                                                  "--prompt_file={new}"],
     2, r"does not exist"),
    ("generate_bad_top_p", "generate", ["--model_dir={model}", "--prompt=hi", "--top_p=2"],
     2, r"--top_p must be a finite number in \(0, 1\]"),
    # export.py
    ("export_model_dir_is_file", "export", ["--model_dir={root}/a_file", "--export_dir={new}"],
     2, r"--model_dir=.*a_file is a file"),
    ("export_export_dir_is_file", "export", ["--model_dir={model}",
                                             "--export_dir={root}/a_file"],
     2, r"--export_dir=.*a_file is a file"),
    ("export_max_seq_len_beyond_int32", "export", ["--model_dir={model}", "--export_dir={new}",
                                                   "--max_seq_len=3000000000"],
     2, r"--max_seq_len must be an integer in \[1, 2147483647\] .*got 3000000000"),
    # prepare_data.py
    ("prepare_missing_raw_path", "prepare_data", ["--dataset=text", "--level=char",
                                                  "--raw_path={root}/no_such.txt",
                                                  "--data_dir={new}"],
     2, r"--raw_path=.*no_such.txt does not exist"),
    ("prepare_unknown_dataset", "prepare_data", ["--dataset=nosuch", "--data_dir={new}"],
     2, r"--dataset=nosuch: value should be one of"),
    ("prepare_bad_level", "prepare_data", ["--dataset=text", "--level=sentence",
                                           "--raw_path={root}/text.txt", "--data_dir={new}"],
     2, r"--level=sentence: value should be one of <byte\|char\|word>"),
    ("prepare_option_of_another_corpus", "prepare_data", ["--dataset=builtin", "--level=char",
                                                          "--data_dir={new}"],
     2, r"--dataset=builtin does not take --level"),
    ("prepare_data_dir_is_file", "prepare_data", ["--dataset=builtin",
                                                  "--data_dir={root}/a_file"],
     2, r"--data_dir=.*a_file is a file"),
    # import_weights.py
    ("import_hf_config_not_json", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_not_json", "--model_dir={new}"],
     2, r"hf_not_json/config.json is not a JSON file"),
    ("import_hf_config_of_another_model", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_bert", "--model_dir={new}"],
     2, r"hf_bert/config.json is not a TransfoXL configuration: vocab_size, .* \(model_type "
        r"'bert'\)"),
    ("import_hf_garbage_safetensors", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_garbage_safetensors", "--model_dir={new}"],
     2, r"hf_garbage_safetensors/model.safetensors: .*(not a safetensors file|not JSON)"),
    ("import_hf_safetensors_header_list", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_list_header", "--model_dir={new}"],
     2, r"model.safetensors: the safetensors header is not a JSON object"),
    ("import_hf_safetensors_bad_entry", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_bad_entry", "--model_dir={new}"],
     2, r"model.safetensors: header entry 'w' is not a safetensors tensor"),
    ("import_hf_garbage_h5", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_garbage_h5", "--model_dir={new}"],
     2, r"hf_garbage_h5/tf_model.h5 is not a readable HDF5 file"),
    ("import_hf_no_weight_file", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_no_weights", "--model_dir={new}"],
     2, r"hf_no_weights has none of \['model.safetensors'"),
    ("import_hf_missing_input_dir", "import_weights",
     ["--source=huggingface", "--input_dir={root}/no_such_dir", "--model_dir={new}"],
     2, r"--input_dir=.*no_such_dir is not a directory"),
    ("import_garbage_corpus_info", "import_weights",
     ["--source=tf1", "--checkpoint={model}", "--corpus_info={root}/garbage.json",
      "--model_dir={new}"],
     2, r"--corpus_info=.*garbage.json is not a JSON file"),
    ("import_corpus_info_not_object", "import_weights",
     ["--source=tf1", "--checkpoint={model}", "--corpus_info={root}/list.json",
      "--model_dir={new}"],
     2, r"--corpus_info=.*list.json holds a list"),
    ("import_tf1_not_a_checkpoint", "import_weights",
     ["--source=tf1", "--checkpoint={root}/a_file", "--model_dir={new}"],
     2, r"cannot read a TF checkpoint at .*a_file"),
    ("import_tf1_foreign_checkpoint", "import_weights",
     ["--source=tf1", "--checkpoint={model}", "--model_dir={new}"],
     2, r"not a checkpoint of the reference TF Transformer-XL"),
    ("import_model_dir_is_file", "import_weights",
     ["--source=huggingface", "--input_dir={root}/hf_no_weights", "--model_dir={root}/a_file"],
     2, r"--model_dir=.*a_file is a file"),
    ("import_without_source", "import_weights", ["--model_dir={new}"],
     2, r"missing required flag --source;"),
    ("import_tf1_without_checkpoint", "import_weights", ["--source=tf1", "--model_dir={new}"],
     2, r"--source=tf1 needs --checkpoint"),
    # Flag files: self-inclusion, loops, devices, pipes, non-UTF-8 (checked before absl).
    ("train_flagfile_includes_itself", "train", ["--flagfile={root}/self.flags",
                                                 "--model_dir={new}"],
     2, r"--flagfile=.*self.flags includes itself"),
    ("train_flagfile_loop", "train", ["--flagfile={root}/loop_a.flags", "--model_dir={new}"],
     2, r"--flagfile=.*loop_a.flags includes itself \(.*loop_a.flags -> .*loop_b.flags -> "),
    ("train_flagfile_dev_zero", "train", ["--flagfile=/dev/zero", "--model_dir={new}"],
     2, r"--flagfile=/dev/zero is a character device, not a regular file"),
    ("generate_flagfile_fifo", "generate", ["--model_dir={model}", "--flagfile={fifo}"],
     2, r"--flagfile=.*fifo is a named pipe \(FIFO\), not a regular file"),
    ("generate_flagfile_not_utf8", "generate", ["--model_dir={model}",
                                                "--flagfile={root}/latin1.flags"],
     2, r"--flagfile=.*latin1.flags is not UTF-8 text \(byte 0xe9 at offset 12\)"),
    # Files that never end or block: devices and named pipes.
    ("generate_prompt_file_dev_zero", "generate", ["--model_dir={model}",
                                                   "--prompt_file=/dev/zero"],
     2, r"--prompt_file=/dev/zero is a character device, not a regular file"),
    ("generate_prompt_file_fifo", "generate", ["--model_dir={model}", "--prompt_file={fifo}"],
     2, r"--prompt_file=.*fifo is a named pipe \(FIFO\)"),
    ("evaluate_text_file_fifo", "evaluate", ["--model_dir={model}", "--text_file={fifo}"],
     2, r"--text_file=.*fifo is a named pipe \(FIFO\), not a regular file"),
    ("prepare_raw_path_fifo", "prepare_data", ["--dataset=text", "--level=char",
                                               "--raw_path={fifo}", "--data_dir={new}"],
     2, r"--raw_path=.*fifo is a named pipe \(FIFO\), not a regular file"),
    # 64-bit values and unbounded lengths.
    ("generate_num_tokens_wraps", "generate", ["--model_dir={model}", "--prompt=hi",
                                               "--num_tokens=4294967302"],
     2, r"--num_tokens must be an integer in \[0, 1000000\] .*got 4294967302"),
    ("generate_num_tokens_unbounded", "generate", ["--model_dir={model}", "--prompt=hi",
                                                   "--num_tokens=1000000000"],
     2, r"--num_tokens must be an integer in \[0, 1000000\]"),
    ("generate_top_k_wraps", "generate", ["--model_dir={model}", "--prompt=hi",
                                          "--top_k=4294967297"],
     2, r"--top_k must be an integer in \[0, 2147483647\] .*got 4294967297"),
    ("evaluate_clamp_len_wraps", "evaluate", ["--model_dir={model}", "--text_file={root}/text.txt",
                                              "--clamp_len=4294967297"],
     2, r"--clamp_len must be an integer in \[0, 2147483647\] or -1 .*got 4294967297"),
    ("export_mem_len_wraps", "export", ["--model_dir={model}", "--export_dir={new}",
                                        "--mem_len=4294967297"],
     2, r"--mem_len must be an integer in \[0, 2147483647\] .*got 4294967297"),
    ("train_n_layer_huge", "train", TINY + ["--n_layer=100000", "--model_dir={new}",
                                            "--data_dir={data}"],
     2, r"--n_layer must be an integer in \[1, 1024\]"),
    # Non-UTF-8 command lines and files.
    ("export_dir_not_utf8", "export", ["--model_dir={model}", "--export_dir={new}\udcff"],
     2, r"--export_dir=.*new\\xff is not UTF-8 \(byte 0xff at offset \d+\)"),
    ("generate_prompt_not_utf8_argv", "generate", ["--model_dir={model}", "--prompt=caf\udce9"],
     2, r"--prompt=caf\\xe9 is not UTF-8 \(byte 0xe9 at offset 12\)"),
    ("evaluate_config_not_utf8", "evaluate", ["--model_dir={root}/model_latin1_config",
                                              "--text_file={root}/text.txt", "--tb_dir="],
     2, r"model_latin1_config/config.json is not UTF-8 text \(byte 0xe9 at offset \d+\)"),
    # Silent before: weights of another configuration, an edited record info.
    ("evaluate_weights_of_more_layers", "evaluate", ["--model_dir={root}/model_1layer",
                                                     "--text_file={root}/text.txt",
                                                     "--tb_dir="],
     2, r"ckpt-4 holds the weights of 2 layers but a model of .*model_1layer/config.json "
        r"\(n_layer 1"),
    ("evaluate_record_info_edited", "evaluate", ["--model_dir={model}",
                                                 "--data_dir={root}/data_edited",
                                                 "--split=valid", "--batch_size=4",
                                                 "--tb_dir="],
     2, r"record_info-valid.*json was changed after it was written .*re-make the records "
        r"with: python runners/prepare_data.py"),
    ("import_vocab_file_not_utf8", "import_weights",
     ["--source=tf1", "--checkpoint={model}", "--vocab_file={root}/latin1.txt",
      "--model_dir={new}"],
     2, r"--vocab_file=.*latin1.txt is not UTF-8 text \(byte 0xe9 at offset 3\)"),
    ("evaluate_model_dir_fifo", "evaluate", ["--model_dir={fifo}", "--text_file={root}/text.txt"],
     2, r"--model_dir=.*fifo is a named pipe \(FIFO\), not a directory"),
    ("import_two_vocabularies", "import_weights",
     ["--source=tf1", "--checkpoint={model}", "--vocab_pickle={root}/a_file",
      "--vocab_file={root}/a_file", "--model_dir={new}"],
     2, r"pass --vocab_pickle or --vocab_file, not both"),
]


def _check_one_error_line(proc, code, pattern):
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert re.search(pattern, errors[0]), errors[0]
    noise = [w for w in START_UP_NOISE if w in proc.stderr]
    assert not noise, proc.stderr[-3000:]


_FLAGS_OF = {}


def runner_flags(runner):
    """The flags `runners/<runner>.py` defines (absl's own included), from its --helpfull."""
    if runner not in _FLAGS_OF:
        proc = call_runner(runner, ["--helpfull"], cwd=REPO)  # absl exits 1 after it
        _FLAGS_OF[runner] = set(re.findall(r"^\s+(?:-\S,)?--(?:\[no\])?(\w+):", proc.stdout,
                                           re.M))
        assert {"flagfile", "verbosity"} <= _FLAGS_OF[runner], proc.stdout[-2000:]
    return _FLAGS_OF[runner]


def _check_named_flags_exist(runner, proc):
    """Every --flag an error line names (as the problem or as the fix) is a flag of the
    command that printed it, or of the command the line names before it
    ("... re-make them with: python runners/prepare_data.py --splits=valid ...")."""
    line = [x for x in proc.stderr.splitlines() if x.startswith("error: ")][0]
    parts = re.split(r"runners/(\w+)\.py", line)  # text, runner, text, runner, text ...
    owners = [runner] + parts[1::2]
    for owner, text in zip(owners, parts[0::2]):
        named = set(re.findall(r"(?<![\w/-])--([a-z][a-z0-9_]*)", text)) - {"no_such_flag"}
        known = runner_flags(owner)
        unknown = {n for n in named if n not in known and n.removeprefix("no") not in known}
        assert not unknown, f"{owner}.py has no flag {sorted(unknown)}: {line}"


def _bad_input(case_id, shared, tmp_path, call):
    """Runs the case `case_id` of CASES with `call` (`call_runner` or `run_runner`); checks the
    one error line, that the flags it names exist, and that nothing changed."""
    runner, args, code, pattern = {c[0]: c[1:] for c in CASES}[case_id]
    new = str(tmp_path / "new")
    values = dict(shared, new=new, fifo=str(tmp_path / "fifo"))
    os.mkfifo(values["fifo"])  # outside the snapshots: reading it would block
    before = snapshot(shared["model"], shared["data"], shared["root"])
    proc = call(runner, [a.format(**values) for a in args], cwd=str(tmp_path))
    _check_one_error_line(proc, code, pattern)
    _check_named_flags_exist(runner, proc)
    assert snapshot(shared["model"], shared["data"], shared["root"]) == before
    if any("{new}" in a for a in args):
        assert not os.path.exists(new), os.listdir(new)


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_bad_input_is_one_line_and_nothing_changes(shared, tmp_path, case_id):
    _bad_input(case_id, shared, tmp_path, call_runner)


# Cases run as a user runs them: a usage error before TensorFlow loads, and one found after it
# loaded (the model's weights): the exit status of the process, and none of TensorFlow's C++
# start-up lines on the console (the tests below check both for runtime failures, exit code 1).
IN_A_PROCESS = ["train_unknown_flag", "evaluate_weights_of_more_layers"]


@pytest.mark.parametrize("case_id", IN_A_PROCESS)
def test_bad_input_in_a_process_of_its_own(shared, tmp_path, case_id):
    _bad_input(case_id, shared, tmp_path, run_runner)


@pytest.mark.parametrize("runner,flag", [("train", "model_dir"), ("train", "data_dir"),
                                         ("prepare_data", "data_dir"), ("export", "export_dir"),
                                         ("evaluate", "model_dir")])
@pytest.mark.parametrize("link", ["loop", "dangling"])
def test_symbolic_link_loop_or_dangling_link_names_the_cause(shared, tmp_path, runner, flag,
                                                              link):
    path = tmp_path / "link"
    os.symlink(path if link == "loop" else tmp_path / "gone", path)
    args = {"train": ["--model_dir={model}", "--data_dir={data}"] + TINY,
            "prepare_data": ["--dataset=builtin"], "export": ["--model_dir={model}"],
            "evaluate": ["--data_dir={data}"]}[runner]
    args = [a.format(**shared) for a in args if not a.startswith(f"--{flag}=")]
    before = snapshot(shared["model"], shared["data"])
    proc = call_runner(runner, args + [f"--{flag}={path}"], cwd=str(tmp_path))
    cause = ("is a symbolic link loop" if link == "loop"
             else f"is a symbolic link to {tmp_path / 'gone'}, which does not exist")
    _check_one_error_line(proc, 2, re.escape(f"--{flag}={path} {cause}"))
    assert snapshot(shared["model"], shared["data"]) == before
    assert sorted(os.listdir(tmp_path)) == ["link"]


def test_evaluate_on_damaged_records_names_the_file_and_split(shared, tmp_path):
    data = writable_copy(shared["data"], tmp_path / "data")
    records = sorted(n for n in os.listdir(data)
                     if n.startswith("valid.bsz-4.") and n.endswith(".tfrecords"))
    assert records, os.listdir(data)  # training's validation layout: evaluate --batch_size=4
    path = os.path.join(data, records[0])
    with open(path, "r+b") as f:  # same size, one byte changed
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    before = snapshot(shared["model"])
    proc = call_runner("evaluate", [f"--model_dir={shared['model']}", f"--data_dir={data}",
                                   "--split=valid", "--batch_size=4", "--tb_dir="],
                      cwd=str(tmp_path))
    _check_one_error_line(proc, 2, re.escape(records[0]) + r".*(sha256|checksum)")
    assert snapshot(shared["model"]) == before


def _read_only_model_wrap(shared, tmp_path):
    """(model, wrap): a copy of the shared model and a command prefix that runs the runner with
    that copy bind-mounted read-only; (None, None) where that needs root and unshare."""
    model = writable_copy(shared["model"], tmp_path / "model")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    wrap = ["unshare", "-m", "sh", "-c", script, model]
    probe = subprocess.run(wrap + ["sh", "-c", f"touch '{model}/probe' 2>/dev/null || echo ro"],
                           capture_output=True, text=True) if shutil.which("unshare") else None
    if probe is None or probe.stdout.strip() != "ro":
        return None, None
    return model, wrap


# The evaluations of the next test, one after the other in one process started as a user's
# shell starts it (runners/evaluate.py's main by `call_runner`); prints [[exit code, stdout,
# stderr], ...] as one JSON line.
EVALUATIONS = textwrap.dedent("""
    import json, sys
    from runner_calls import call_runner
    runs = [call_runner("evaluate", args) for args in json.loads(sys.argv[1])]
    print(json.dumps([[proc.returncode, proc.stdout, proc.stderr] for proc in runs]))
""")


def test_normal_run_starts_quietly_and_a_read_only_model_dir_suggests_tb_dir(shared, tmp_path):
    """Evaluating the tiny model (read-only where a bind mount can make it so) prints no
    TensorFlow C++ start-up line; on the read-only model directory without --tb_dir, one line
    suggests --tb_dir, and with it the same run succeeds. Both runs in one process (in the
    private mount namespace), whose own stderr, where TensorFlow's C++ code writes, is quiet."""
    model, wrap = _read_only_model_wrap(shared, tmp_path)
    args = [f"--model_dir={model or shared['model']}", f"--data_dir={shared['data']}",
            "--split=valid", "--batch_size=4", "--max_steps=1", "--noprogress"]
    runs = ([args] if wrap is not None else []) + [args + [f"--tb_dir={tmp_path / 'tb'}"]]
    env = user_env(PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "tests", "support")]))
    process = subprocess.run(list(wrap or ()) + [sys.executable, "-c", EVALUATIONS,
                                                 json.dumps(runs)],
                             capture_output=True, text=True, cwd=str(tmp_path), env=env,
                             timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    procs = [subprocess.CompletedProcess([], code, out, err) for code, out, err
             in json.loads(process.stdout.strip().splitlines()[-1])]
    assert len(procs) == len(runs)
    if wrap is not None:
        _check_one_error_line(procs[0], 1, r"cannot write the TensorBoard summaries to "
                                           r".*eval-valid: .* is read-only or not writable; "
                                           r"give --tb_dir=")
    proc = procs[-1]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"tokens"' in proc.stdout and os.listdir(tmp_path / "tb")
    for stderr in (proc.stderr, process.stderr):
        assert not [w for w in START_UP_NOISE if w in stderr], stderr
        assert not re.search(r"^[IWE]\d{4} ", stderr, re.M), stderr
    if wrap is None:
        pytest.skip("ran quietly; the read-only part needs root and unshare (a bind mount)")


def test_verbosity_1_adds_the_traceback(shared, tmp_path):
    proc = call_runner("evaluate", [f"--model_dir={shared['model']}",
                                    f"--text_file={shared['root']}/empty.txt", "--verbosity=1"],
                      cwd=str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "EvalInputError" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --text_file=")


def _private_mount_works():
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = subprocess.run([unshare, "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


def _with_tmpfs(options, mount_point):
    """A command prefix that runs the runner with a private tmpfs at `mount_point`."""
    return [shutil.which("unshare"), "-m", "sh", "-c",
            'mount -t tmpfs -o "$0" tmpfs "$1" && shift 1 && exec "$@"', options, mount_point]


TMPFS_CASES = [  # (id, tmpfs options, runner, args with {mnt} and {model}, exit code, regex)
    ("prepare_read_only", "ro,size=64k", "prepare_data",
     ["--dataset=builtin", "--max_bytes=400000", "--data_dir={mnt}/d", "--noprogress"],
     1, r"the directory holding {mnt}/d is read-only: cannot create it"),
    ("prepare_disk_full", "size=64k", "prepare_data",
     ["--dataset=builtin", "--max_bytes=400000", "--data_dir={mnt}/d", "--noprogress"],
     1, r"no space left on {mnt}/d while writing \S+ \(disk full\)"),
    ("export_read_only", "ro,size=64k", "export",
     ["--model_dir={model}", "--export_dir={mnt}/e", "--notext_signatures"],
     1, r"{mnt} is not writable \(read-only\)"),
]  # export.py on a full disk: tests/serving/test_serving_loaders.py (a 256 KiB tmpfs)


@pytest.mark.skipif(not _private_mount_works(),
                    reason="needs `unshare -m` and tmpfs mounts (root or user namespaces)")
@pytest.mark.parametrize("options,runner,args,code,pattern", [c[1:] for c in TMPFS_CASES],
                         ids=[c[0] for c in TMPFS_CASES])
def test_runtime_failures_on_a_small_tmpfs(shared, tmp_path, options, runner, args, code,
                                           pattern):
    """A read-only or full file system (a private tmpfs mount of the runner's process)."""
    mount_point = str(tmp_path / "mnt")
    os.mkdir(mount_point)
    before = snapshot(shared["model"])
    proc = run_runner(runner, [a.format(mnt=mount_point, **shared) for a in args],
                      cwd=str(tmp_path), wrap=_with_tmpfs(options, mount_point))
    _check_one_error_line(proc, code, pattern.format(mnt=re.escape(mount_point)))
    assert snapshot(shared["model"]) == before


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_out_of_memory_during_the_work_is_one_line(shared, tmp_path):
    """Sizes below the memory lower bound of this machine, under a 3 GB address-space limit:
    TensorFlow's ResourceExhaustedError becomes one line with exit code 1."""
    args = [f"--model_dir={shared['model']}", f"--text_file={shared['root']}/text.txt",
            "--batch_size=16", "--mem_len=400000", "--tb_dir=", "--noprogress"]
    before = snapshot(shared["model"])
    # oneDNN's allocator waits 10 s for memory to be freed before it gives up; TensorFlow's
    # plain CPU allocator raises the same ResourceExhaustedError at once.
    proc = run_runner("evaluate", args, cwd=str(tmp_path), env=user_env(TF_ENABLE_ONEDNN_OPTS="0"),
                      wrap=[shutil.which("prlimit"), "--as=3000000000"])
    _check_one_error_line(proc, 1, r"out of memory allocating a tensor of shape \[16,400\d*,32\]"
                                   r"; lower --batch_size")
    assert snapshot(shared["model"]) == before


def test_memory_estimate_counts_what_the_model_holds():
    """The memory term is the bytes of the model's own memory tensors; training keeps more."""
    import txl_tf
    from txl_tf.model.memory_estimate import MemoryEstimateError, check_step_fits, step_memory_bytes

    config = txl_tf.TransformerXLConfig(n_token=30, n_layer=3, d_model=16, n_head=2, d_head=8,
                                        d_inner=32, tgt_len=5, mem_len=7)
    mems = txl_tf.TransformerXL(config).init_mems(4, 7)
    held = sum(int(m.numpy().nbytes) for m in mems)
    no_attention = step_memory_bytes(config, 4, tgt_len=0, mem_len=7)
    assert no_attention == held
    scores = 4 * config.n_head * 5 * (5 + 7) * 4  # one [B, H, Q, M + Q] float32 tensor
    assert step_memory_bytes(config, 4) == held + 2 * scores
    assert step_memory_bytes(config, 4, training=True) == held + (config.n_layer + 1) * scores
    check_step_fits(config, 4, available=held + 2 * scores)
    with pytest.raises(MemoryEstimateError, match=r"tgt_len 5, mem_len 7, batch 4"):
        check_step_fits(config, 4, available=held + 2 * scores - 1)


def test_error_classes_map_to_exit_codes():
    """runners/cli/__init__.py: runtime failures 1, usage errors 2, anything else a bug (None)."""
    import errno
    import fractions

    import tensorflow as tf

    from runners import cli
    from txl_tf.commands.train_options import TrainError

    def raised(fn):
        try:
            fn()
        except BaseException as error:  # noqa: BLE001
            return error
        raise AssertionError("no exception")

    oom = tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with "
                                           "shape[8,100,32] and type float")
    assert cli.classify(oom) == (1, "out of memory allocating a tensor of shape [8,100,32]; "
                                    f"{cli.errors.memory_fix()}.")
    assert cli.classify(tf.errors.DataLossError(None, None, "corrupted record at 12"))[0] == 1
    assert cli.classify(MemoryError())[0] == 1
    assert cli.classify(OSError(errno.EROFS, "Read-only file system", "/x/y")) == (
        1, "/x/y is read-only; choose a writable directory or fix its permissions.")
    assert cli.classify(TrainError("bad flag"))[1] == "bad flag"
    assert cli.classify(TrainError("bad flag"))[0] == 2

    class DamagedDuringWork(TrainError):
        exit_code = 1

    assert cli.classify(DamagedDuringWork("damaged ckpt-4.index")) == (1, "damaged ckpt-4.index")
    assert cli.classify(raised(lambda: int("many")))[0] == 2  # raised by txl-tf's own code
    # A ValueError raised inside a library's Python code (not a check of txl-tf) is a bug.
    assert cli.classify(raised(lambda: fractions.Fraction("many"))) is None
    assert cli.classify(KeyError("file_bytes")) is None
