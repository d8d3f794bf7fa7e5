"""`python runners/train.py --flagfile=runners/enwik8.flags` as a user without a TPU runs it (in
this process, `runner_calls.call_runner`, but where a TPU is asked for: its own process).

* On this CPU machine, with a stand-in enwik8 archive (`--raw_path`, `--noverify_checksum`) and
  small model overrides, the recipe trains without any `--strategy` flag, says in one line which
  strategy it chose and why, and keeps the recipe's global batch through gradient accumulation
  when a replica may compute fewer streams at once (`--max_per_replica_batch`).
* Offline (the download URL is a closed port on 127.0.0.1), it stops within seconds with one
  line naming the URL and `--raw_path`, and leaves no file that looks like a download.
* A download cut short by the server is refused and leaves nothing behind.
* `--strategy=auto` / `--strategy=tpu` resolution, and the accumulation chooser.
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import zipfile

import pytest
import tensorflow as tf

import tf_records
import txl_tf
from txl_tf.training import batch_fit
from txl_tf.training import distribute as strategy_lib
from txl_tf.model import memory_estimate

from runner_calls import call_runner

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(REPO, "runners", "train.py")
RECIPE = os.path.join(REPO, "runners", "enwik8.flags")
# One layer (the recipe's 24 overridden): the strategy, the accumulation and the data do not
# depend on the stacking of layers.
SMALL = ["--n_layer=1", "--d_model=64", "--n_head=2", "--d_head=32", "--d_inner=128",
         "--tgt_len=32", "--mem_len=32", "--train_batch_size=4", "--train_steps=2",
         "--warmup_steps=1", "--num_passes=1", "--steps_per_loop=1", "--log_steps=1",
         "--save_steps=2", "--eval_steps=2", "--max_eval_batches=2"]


def run(args, cwd, timeout=300):
    """(train.py's result, its seconds) in a process of its own."""
    start = time.time()
    result = subprocess.run([sys.executable, TRAIN, *args], cwd=str(cwd), capture_output=True,
                            text=True, timeout=timeout,
                            env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))
    return result, time.time() - start


def run_here(args, cwd):
    """(train.py's result, its seconds) in this process (`runner_calls.call_runner`)."""
    start = time.time()
    result = call_runner("train", args, cwd=cwd)
    return result, time.time() - start


def user_lines(text):
    """The lines a user reads, without TensorFlow's C++ start-up log."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith(
        ("I0000", "W0000", "E0000", "WARNING: All log messages"))]


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stand_in_enwik8(path):
    """A small zip with a member named enwik8: XML-ish text, 120 kB."""
    lines = [f"<page><title>Article {i}</title> text of [[link {i % 17}]] and {{{{cite}}}} "
             f"number {i * 7919 % 1000}</page>" for i in range(1500)]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("enwik8", "\n".join(lines).encode())


def test_enwik8_recipe_trains_on_the_cpu_without_strategy_flag(tmp_path):
    stand_in_enwik8(tmp_path / "enwik8.zip")
    result, _ = run_here([f"--flagfile={RECIPE}", "--raw_path=enwik8.zip", "--noverify_checksum",
                          "--eval_bytes=10000", "--data_dir=data", "--model_dir=model",
                          "--max_per_replica_batch=2", "--jit_compile=false", *SMALL], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = user_lines(result.stdout)
    chosen = [line for line in out if line.startswith("strategy:")]
    assert chosen == [line for line in out if "strategy" in line][:1] and len(chosen) == 1
    assert chosen[0].startswith("strategy: default (") and "no TPU attached" in chosen[0]
    accum = [line for line in out if line.startswith("gradient accumulation:")]
    assert len(accum) == 1 and "--grad_accum_steps=2" in accum[0], out
    assert "--max_per_replica_batch=2" in accum[0]
    summary = json.loads((tmp_path / "model" / "train_summary.json").read_text())
    assert summary["step"] == 2 and summary["replicas"] == 1 and summary["global_batch"] == 4
    assert summary["dataset"] == "enwik8" and summary["valid_loss"] > 0
    info = tf_records.read_corpus_info(tmp_path / "data")
    assert info["dataset"] == "enwik8" and info["num_tokens"]["valid"] <= 10000
    assert txl_tf.load_config(str(tmp_path / "model")).n_layer == 1  # flags beat the recipe


def test_offline_recipe_stops_at_once_naming_url_and_raw_path(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/enwik8.zip"
    result, seconds = run_here([f"--flagfile={RECIPE}", f"--url={url}", "--data_dir=data",
                                "--model_dir=model", *SMALL], tmp_path)
    assert result.returncode == 1 and seconds < 60  # a runtime failure, not a usage error
    errors = [line for line in user_lines(result.stderr) if line.startswith("error")]
    assert len(errors) == 1 and url in errors[0] and "--raw_path" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and "TPU" not in result.stderr
    raw = tmp_path / "data" / "raw"
    assert not raw.exists() or os.listdir(raw) == []  # no enwik8.zip, no enwik8.zip.part
    assert not (tmp_path / "model").exists()


def test_explicit_tpu_strategy_without_a_tpu_is_one_clear_line(tmp_path):
    stand_in_enwik8(tmp_path / "enwik8.zip")
    result, _ = run([f"--flagfile={RECIPE}", "--strategy=tpu", "--raw_path=enwik8.zip",
                     "--data_dir=data", "--model_dir=model", *SMALL], tmp_path, timeout=120)
    assert result.returncode == 2
    lines = user_lines(result.stderr)
    assert len(lines) == 1 and "--tpu=NAME" in lines[0] and "--strategy=auto" in lines[0]


class _ShortBodyHandler(http.server.BaseHTTPRequestHandler):
    """Announces 100,000 bytes, sends 40,000, then closes the connection."""

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(b"x" * 40000)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_cut_download_leaves_nothing_that_looks_complete(tmp_path):
    server = http.server.HTTPServer(("127.0.0.1", 0), _ShortBodyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/enwik8.zip"
        dest = tmp_path / "raw" / "enwik8.zip"
        with pytest.raises(tf_records.DownloadError, match="40000 bytes"):
            tf_records.download.fetch(url, dest, progress=False, timeout=10)
        assert os.listdir(tmp_path / "raw") == []
    finally:
        server.shutdown()
        server.server_close()


def test_auto_strategy_on_this_machine_is_the_cpu(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    choice = strategy_lib.resolve_auto()
    assert choice.name == "default" and "no TPU attached" in choice.reason
    assert strategy_lib.resolve_auto(tpu="grpc://10.0.0.2:8470").name == "tpu"
    assert strategy_lib.resolve_auto(devices=["/CPU:0", "/CPU:1"]).name == "mirrored"
    with pytest.raises(strategy_lib.StrategyError, match="--tpu=NAME"):
        strategy_lib.create_strategy("tpu")


@pytest.mark.parametrize("per_replica, given, limit, expected", [
    (64, 1, None, (1, 64)), (64, 1, 64, (1, 64)), (64, 1, 5, (16, 4)), (64, 2, 40, (2, 32)),
    (12, 1, 5, (3, 4)), (7, 1, 3, (7, 1)), (8, 1, 0, (8, 1))])
def test_grad_accum_is_the_smallest_divisor_that_fits(per_replica, given, limit, expected):
    fit = batch_fit.choose_grad_accum(per_replica, given, limit, "test")
    assert (fit.grad_accum_steps, fit.chunk) == expected
    assert (fit.reason is None) == (expected[0] == given)


def test_memory_estimate_splits_the_enwik8_recipe_on_a_16_gb_cpu(monkeypatch):
    config = txl_tf.TransformerXLConfig(n_token=204, n_layer=24, d_model=1024, n_head=8,
                                        d_head=128, d_inner=3072, tgt_len=768, mem_len=768)
    monkeypatch.setattr(batch_fit, "available_memory_bytes", lambda: 16 * 2**30)
    strategy = tf.distribute.get_strategy()
    fit = batch_fit.fit_per_replica_batch(config, 64, 1, 0, strategy, 1)
    per_stream = memory_estimate.training_bytes_per_stream(config)
    budget = batch_fit.ACTIVATION_SHARE * 16 * 2**30 - 16 * memory_estimate.approx_parameters(config)
    assert fit.chunk * per_stream <= budget < 2 * fit.chunk * per_stream
    assert fit.grad_accum_steps * fit.chunk == 64 and "estimate" in fit.reason
    small = config.replace(n_layer=2, d_model=64, n_head=2, d_head=32, d_inner=128, tgt_len=32,
                           mem_len=32)
    assert batch_fit.fit_per_replica_batch(small, 64, 1, 0, strategy, 1).grad_accum_steps == 1


def test_a_model_whose_weights_and_one_stream_exceed_the_memory_is_refused(monkeypatch):
    """Weights x 16 bytes (weight, gradient, two Adam slots) plus one stream's activations:
    at exactly the memory the run goes on, one byte less is refused before anything is built."""
    config = txl_tf.TransformerXLConfig(n_token=256, n_layer=1000, d_model=32, n_head=2,
                                        d_head=16, d_inner=64, tgt_len=16, mem_len=16)
    hd = config.n_head * config.d_head
    weights = 16 * (config.n_layer * (5 * config.d_model * hd + 2 * config.d_model
                                      * config.d_inner) + 2 * config.n_token * config.d_model)
    need = weights + memory_estimate.training_bytes_per_stream(config)
    batch_fit.check_one_stream_fits(config, need - weights, need, "CPU")
    with pytest.raises(memory_estimate.MemoryEstimateError,
                       match=r"n_layer 1000.*one replica here has .* GiB of CPU memory"):
        batch_fit.check_one_stream_fits(config, need - weights, need - 1, "CPU")
    monkeypatch.setattr(batch_fit, "available_memory_bytes", lambda: need - 1)
    with pytest.raises(memory_estimate.MemoryEstimateError, match="out of memory before"):
        batch_fit.fit_per_replica_batch(config, 4, 1, 0, tf.distribute.get_strategy(), 1)
