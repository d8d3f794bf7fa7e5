"""Hugging Face `transformers` TransfoXL (PyTorch, CPU or GPU) throughput, for comparison with
txl-tf.

Runs in its OWN environment (torch + transformers==4.30.2), never the project's, and imports
nothing from this repository:

    python3 -m venv /work/hfenv
    /work/hfenv/bin/pip install torch==2.13.0 transformers==4.30.2
    /work/hfenv/bin/python runners/tools/benchmark_huggingface.py --n_layer 6 --d_model 256 ...

It builds `TransfoXLLMHeadModel` with the same shape as the txl-tf model and measures
  * the training step txl-tf's benchmark times (txl-tf's Trainer step) written for PyTorch:
    forward over a segment [B, Q] with memory, mean NLL, backward, global-norm clipping, Adam
    update, memory carried to the next step;
  * the evaluation step: forward with memory and labels under `torch.no_grad()`.
Tokens per step are B * Q for both libraries (HF shifts the labels inside the model and scores
Q - 1 of them, but computes all Q positions).

Two modes:
  * stand-alone (default): warm-up, then `--steps` timed steps of each kind; prints one line
    `HF_JSON {...}`;
  * `--serve`: reads one JSON command per line on stdin, {"cmd": "train"|"eval", "steps": n},
    runs n steps and answers one JSON line {"seconds": [per-step seconds]} on stdout;
    {"cmd": "rss"} answers the peak resident memory; {"cmd": "quit"} ends. `benchmark.py
    --compare_huggingface` drives it to interleave HF and txl-tf measurements in one run.
"""
import argparse
import json
import resource
import statistics
import sys
import time

import torch
import transformers
from transformers import TransfoXLConfig, TransfoXLLMHeadModel


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n_token", type=int, default=204)
    p.add_argument("--n_layer", type=int, default=6)
    p.add_argument("--d_model", type=int, default=256)
    p.add_argument("--d_embed", type=int, default=None)
    p.add_argument("--n_head", type=int, default=8)
    p.add_argument("--d_head", type=int, default=32)
    p.add_argument("--d_inner", type=int, default=1024)
    p.add_argument("--div_val", type=int, default=1)
    p.add_argument("--cutoffs", type=str, default="")
    p.add_argument("--untie_r", type=int, default=0)
    p.add_argument("--pre_lnorm", type=int, default=0)
    p.add_argument("--same_length", type=int, default=0)
    p.add_argument("--clamp_len", type=int, default=-1)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--dropatt", type=float, default=0.0)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--tgt_len", type=int, default=128)
    p.add_argument("--mem_len", type=int, default=128)
    p.add_argument("--eval_tgt_len", type=int, default=None)
    p.add_argument("--eval_mem_len", type=int, default=None)
    p.add_argument("--learning_rate", type=float, default=2.5e-4)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                   help="bfloat16: forward passes under torch.autocast('cpu', bfloat16), "
                        "float32 weights and optimizer (PyTorch's mixed precision)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda: the model, its memory and tokens on the GPU; float32 with TF32 "
                        "matmuls (TensorFlow's default for float32 on the same card), bfloat16 "
                        "under torch.autocast('cuda', bfloat16)")
    p.add_argument("--serve", action="store_true")
    return p.parse_args(argv)


class HFBench:
    """TransfoXLLMHeadModel plus its train and eval steps, memory carried across calls."""

    def __init__(self, args):
        self.torch = torch
        torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        cutoffs = [int(c) for c in args.cutoffs.split(",") if c.strip()]
        self.config = TransfoXLConfig(
            vocab_size=args.n_token, cutoffs=cutoffs, d_model=args.d_model,
            d_embed=args.d_embed or args.d_model, n_head=args.n_head, d_head=args.d_head,
            d_inner=args.d_inner, div_val=args.div_val, pre_lnorm=bool(args.pre_lnorm),
            n_layer=args.n_layer, mem_len=args.mem_len, clamp_len=args.clamp_len,
            same_length=bool(args.same_length), proj_share_all_but_first=False,
            attn_type=0, dropout=args.dropout, dropatt=args.dropatt,
            untie_r=bool(args.untie_r), layer_norm_epsilon=1e-12)
        self.device = args.device
        if args.device == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.model = TransfoXLLMHeadModel(self.config).to(args.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.learning_rate)
        self.args = args
        if args.precision == "bfloat16":
            # HF's adaptive softmax writes bf16 results into float32 buffers and fails under
            # autocast: run it in float32 (as txl-tf runs its softmax).
            crit_forward = self.model.crit.forward

            def crit_float32(hidden, labels=None, keep_order=False):
                with torch.autocast(args.device, enabled=False):
                    return crit_forward(hidden.float(), labels, keep_order)
            self.model.crit.forward = crit_float32
        b = args.batch_size
        self.eval_tgt_len = args.eval_tgt_len or args.tgt_len
        self.eval_mem_len = args.eval_mem_len if args.eval_mem_len is not None else args.mem_len
        gen = torch.Generator().manual_seed(args.seed)
        self.train_tokens = torch.randint(0, args.n_token, (b, args.tgt_len),
                                          generator=gen).to(args.device)
        self.eval_tokens = torch.randint(0, args.n_token, (b, self.eval_tgt_len),
                                         generator=gen).to(args.device)
        self.train_mems = None
        self.eval_mems = None

    def _autocast(self):
        return self.torch.autocast(self.device, dtype=self.torch.bfloat16,
                                   enabled=self.args.precision == "bfloat16")

    @property
    def n_params(self):
        return sum(p.numel() for p in self.model.parameters())

    def train_step(self):
        torch = self.torch
        self.model.train()
        self.model.transformer.mem_len = self.args.mem_len
        if self.train_mems is None:
            self.train_mems = self.model.transformer.init_mems(self.args.batch_size)
        with self._autocast():
            out = self.model(input_ids=self.train_tokens, labels=self.train_tokens,
                             mems=self.train_mems, return_dict=True)
            loss = out.losses.float().mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
        self.optimizer.step()
        self.train_mems = out.mems
        return float(loss.detach())

    def eval_step(self):
        torch = self.torch
        self.model.eval()
        self.model.transformer.mem_len = self.eval_mem_len
        if self.eval_mems is None:
            self.eval_mems = self.model.transformer.init_mems(self.args.batch_size)
        with torch.no_grad(), self._autocast():
            out = self.model(input_ids=self.eval_tokens, labels=self.eval_tokens,
                             mems=self.eval_mems, return_dict=True)
            loss = out.losses.float().mean()
        self.eval_mems = out.mems
        return float(loss.detach())

    def time_steps(self, kind, steps):
        step = self.train_step if kind == "train" else self.eval_step
        seconds = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            seconds.append(time.perf_counter() - start)
        return seconds


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def serve(bench):
    print(json.dumps({"ready": True, "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "threads": torch.get_num_threads(), "n_params": bench.n_params}),
          flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        command = json.loads(line)
        if command["cmd"] == "quit":
            break
        if command["cmd"] == "rss":
            print(json.dumps({"peak_rss_mb": peak_rss_mb()}), flush=True)
            continue
        if command["cmd"] not in ("train", "eval"):
            print(json.dumps({"error": f"unknown cmd {command['cmd']!r}"}), flush=True)
            continue
        print(json.dumps({"seconds": bench.time_steps(command["cmd"], int(command["steps"]))}),
              flush=True)


def main(argv=None):
    args = parse_args(argv)
    bench = HFBench(args)
    if args.serve:
        serve(bench)
        return
    bench.time_steps("train", args.warmup)
    bench.time_steps("eval", args.warmup)
    train = bench.time_steps("train", args.steps)
    evaluation = bench.time_steps("eval", args.steps)
    b = args.batch_size
    result = {
        "library": "transformers", "torch": torch.__version__, "precision": args.precision,
        "transformers": transformers.__version__, "threads": torch.get_num_threads(),
        "n_params": bench.n_params,
        "train_step_s": statistics.median(train),
        "train_tokens_per_s": b * args.tgt_len / statistics.median(train),
        "eval_step_s": statistics.median(evaluation),
        "eval_tokens_per_s": b * bench.eval_tgt_len / statistics.median(evaluation),
        "peak_rss_mb": peak_rss_mb(),
    }
    print(f"HF train {result['train_tokens_per_s']:.0f} tok/s  eval "
          f"{result['eval_tokens_per_s']:.0f} tok/s")
    print("HF_JSON " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
