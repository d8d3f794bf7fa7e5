"""A tiny word-level model directory and its SavedModel exports, made once per test run and
shared read-only by the serving tests (the conftest's `word_export` fixture).

The model: `tiny_model` of 12 tokens (`VOCAB`: <eos> w0 .. w10), tgt_len 4, mem_len 6,
init_std 0.5, seed 3. Its exports, both with `SETTINGS` (mem_len 6, clamp_len 5, same_length,
gen_mem_len 40) and the request limits `LIMITS`:
  * full/: by runners/export.py run as a user runs it (every signature); what it printed (one
    JSON line) and its stderr are kept in runner.json and runner.stderr;
  * ids/: by `runners.export.run` in the test process, --notext_signatures.
Neither writes warmup requests (--warmup_requests=0: no test reads them here; running each
signature twice at export time would double the cost of the exports; tests/serving/
test_tf_serving.py checks the warmup file of an export of its own).

Example:
  >>> paths = build(root)  # {"model": ..., "full": ..., "ids": ...}
  >>> model = word_model()  # the same weights as paths["model"]'s
"""
import json
import os
import subprocess
import sys

from tf_records.text.tokenize import TextRules
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records.vocab.vocabulary import Vocabulary

from tiny import tiny_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N_TOKEN, MEM_LEN = 12, 6
SETTINGS = dict(mem_len=MEM_LEN, clamp_len=5, same_length=True, gen_mem_len=40)
LIMITS = dict(max_seq_len=24, max_num_tokens=16, max_text_bytes=120, max_batch_size=3,
              max_request_tokens=60, max_request_bytes=200)
RULES = TextRules("word", eos="<eos>")


def vocabulary():
    """The model's `Vocabulary`: <eos>, w0 .. w10."""
    return Vocabulary(["<eos>"] + [f"w{i}" for i in range(11)], "word", specials=["<eos>"])


def word_model():
    """The model of the shared directory (its weights drawn after seeding 3)."""
    return tiny_model(seed=3, n_token=N_TOKEN, tgt_len=4, mem_len=MEM_LEN, init_std=0.5)


def build(root):
    """Writes root/model, root/full (runners/export.py in a child process, run beside the ids
    export of this process) and root/ids; returns {"model", "full", "ids"}: the model
    directory and the two export paths (root/full/1, root/ids/1)."""
    import txl_tf
    from runners import export
    from txl_tf.serving.limits import ServingLimits

    model_dir = os.path.join(root, "model")
    txl_tf.save_model(word_model(), model_dir)
    write_model_vocab(model_dir, vocabulary(), RULES)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(PYTHONPATH=REPO, CUDA_VISIBLE_DEVICES="")
    flags = [f"--model_dir={model_dir}", f"--export_dir={os.path.join(root, 'full')}",
             "--same_length", "--warmup_requests=0"] + [
                 f"--{k}={v}" for k, v in {**SETTINGS, **LIMITS}.items() if k != "same_length"]
    runner = subprocess.Popen([sys.executable, os.path.join(REPO, "runners", "export.py")]
                              + flags, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    try:
        ids = export.run(export.ExportOptions(model_dir, os.path.join(root, "ids"),
                                              text_signatures=False, warmup_requests=0,
                                              **SETTINGS),
                         ServingLimits(**LIMITS))
        stdout, stderr = runner.communicate(timeout=600)
    finally:
        runner.kill()
    assert runner.returncode == 0, stderr[-3000:]
    with open(os.path.join(root, "runner.stderr"), "w") as f:
        f.write(stderr)
    info = json.loads(stdout.strip().splitlines()[-1])
    with open(os.path.join(root, "runner.json"), "w") as f:
        json.dump(info, f)
    return {"model": model_dir, "full": info["export_path"], "ids": ids["export_path"]}
