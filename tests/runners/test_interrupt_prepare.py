"""SIGTERM while data is being prepared, by runners/prepare_data.py and by runners/train.py's
build of a missing corpus: the run stops with the one documented line and exit code 130
(txl_tf/training/interruption.py, docs/training.md), and the data directory holds no temporary
file and nothing that looks complete without being so: a corpus-info.json only with the
vocabulary and every token cache it describes, intact; no record_info of records not written.
Real processes, real signals."""
import glob
import os
import signal
import subprocess
import sys

import pytest

from tf_records.data_dir_layout import CORPUS_INFO_FILE, VOCAB_FILE
from tf_records.records import stream_cache
from tiny import TRAIN_FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Large enough that building it takes seconds after the "building" line (the signal's moment).
CORPUS = {"train_tokens": 6_000_000, "eval_tokens": 2_000, "num_symbols": 16, "period": 24}
COMMANDS = {
    "prepare_data": ["prepare_data.py", "--dataset=synthetic", "--splits=train",
                     *[f"--{k}={v}" for k, v in CORPUS.items()]],
    "train": ["train.py", "--dataset=synthetic", "--per_host_train_bsz=4", "--train_steps=2", "--warmup_steps=1",
              *[f"--corpus_option={k}={v}" for k, v in CORPUS.items()], *TRAIN_FLAGS],
}


def stop_while_building(command, tmp_path):
    """Starts `command` on a new data dir, sends SIGTERM at its "building" line; returns
    (exit code, stdout, stderr, data_dir)."""
    data_dir = tmp_path / "data"
    argv = [sys.executable, os.path.join(REPO, "runners", COMMANDS[command][0]),
            f"--data_dir={data_dir}", *COMMANDS[command][1:]]
    if command == "train":
        argv.append(f"--model_dir={tmp_path / 'model'}")
    process = subprocess.Popen(argv, env=dict(os.environ, PYTHONPATH=REPO,
                                              TF_CPP_MIN_LOG_LEVEL="2"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith("building synthetic in"):
            process.send_signal(signal.SIGTERM)
            break
    out, err = process.communicate(timeout=300)
    return process.returncode, out, "".join(seen) + err, data_dir


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigterm_while_building_leaves_no_half_written_data_dir(tmp_path, command):
    code, out, err, data_dir = stop_while_building(command, tmp_path)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err
    assert "SIGTERM: stopping;" in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: interrupted (SIGTERM) before the work was done; nothing was left "
                      "half-written: run the same command again."], err[-3000:]
    summaries = [line for line in out.splitlines() if line.startswith(("{", "train_summary"))]
    assert not summaries, out  # the signal came before the work was done
    names = os.listdir(data_dir) if data_dir.exists() else []
    assert not [n for n in names if ".tmp" in n], names
    assert not glob.glob(str(data_dir / "record_info-*")), names  # the records were not done
    if CORPUS_INFO_FILE in names:  # looks prepared: then it is
        assert VOCAB_FILE in names
        for split in ("train", "valid", "test"):
            assert stream_cache.load(str(data_dir), split, verify=True).size > 0
    if command == "train":
        assert not glob.glob(str(tmp_path / "model" / "ckpt-*"))
