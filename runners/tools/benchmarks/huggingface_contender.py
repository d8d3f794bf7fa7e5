"""The Hugging Face `transformers` TransfoXL contender (PyTorch; on the CPU with the same threads,
or on the GPU with `--hf_device=cuda`) on the same configuration:
`runners/tools/benchmark_huggingface.py` in --serve mode in its own environment (`--hf_python`),
timed interleaved with txl-tf, round by round."""
import json
import os
import subprocess

from absl import app

from runners.tools.benchmarks.configuration import FLAGS, TOOLS_DIR, eval_lengths, model_config
from runners.tools.benchmarks.speed import speed


class HuggingFaceClient:
    """runners/tools/benchmark_huggingface.py in --serve mode, in its own environment."""

    def __init__(self, threads):
        script = os.path.join(TOOLS_DIR, "benchmark_huggingface.py")
        if not os.path.exists(FLAGS.hf_python):
            raise app.UsageError(
                f"--compare_huggingface needs a Python with torch and transformers==4.30.2 at "
                f"--hf_python={FLAGS.hf_python}; create it with: python3 -m venv /work/hfenv && "
                "/work/hfenv/bin/pip install torch==2.13.0 transformers==4.30.2")
        q, m = eval_lengths()
        config = model_config()
        args = [FLAGS.hf_python, script, "--serve", f"--threads={threads}",
                f"--n_token={FLAGS.n_token}", f"--n_layer={FLAGS.n_layer}",
                f"--d_model={FLAGS.d_model}", f"--d_embed={config.d_embed}",
                f"--n_head={FLAGS.n_head}", f"--d_head={FLAGS.d_head}",
                f"--d_inner={FLAGS.d_inner}", f"--div_val={FLAGS.div_val}",
                f"--cutoffs={','.join(str(c) for c in config.cutoffs)}",
                f"--untie_r={int(FLAGS.untie_r)}",
                f"--pre_lnorm={int(FLAGS.pre_lnorm)}", f"--same_length={int(FLAGS.same_length)}",
                f"--clamp_len={FLAGS.clamp_len}", f"--dropout={FLAGS.dropout}",
                f"--dropatt={FLAGS.dropatt}", f"--batch_size={FLAGS.batch_size}",
                f"--tgt_len={FLAGS.tgt_len}", f"--mem_len={FLAGS.mem_len}",
                f"--eval_tgt_len={q}", f"--eval_mem_len={m}",
                f"--learning_rate={FLAGS.learning_rate}", f"--clip={FLAGS.clip}",
                f"--seed={FLAGS.seed}", f"--precision={FLAGS.hf_precision}",
                f"--device={FLAGS.hf_device}"]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the Hugging Face benchmark process ended; run "
                               "runners/tools/benchmark_huggingface.py by hand to see why")
        return json.loads(line)

    def ask(self, **command):
        """Sends one JSON command; returns the JSON answer."""
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def time_steps(self, kind, steps):
        """Seconds of each of `steps` steps of `kind` ("train" or "eval")."""
        return self.ask(cmd=kind, steps=steps)["seconds"]

    def close(self):
        """Ends the process; returns its peak resident memory (MB)."""
        rss = self.ask(cmd="rss")["peak_rss_mb"]
        self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)
        return rss


def huggingface_figures(record, hf, times, train_tokens, eval_tokens):
    """`huggingface` (its speed, precision and peak memory) and the speed-ups of txl-tf against
    it into `record`; closes `hf`."""
    record["huggingface"] = dict(hf.info, precision=FLAGS.hf_precision, device=FLAGS.hf_device,
                                 peak_rss_mb=hf.close(),
                                 **speed(train_tokens, times["hf_train"], times["hf_eval"],
                                         eval_tokens))
    for kind in ("train", "eval"):
        record[f"{kind}_speedup_vs_huggingface"] = (
            record[f"{kind}_tokens_per_s"] / record["huggingface"][f"{kind}_tokens_per_s"])
