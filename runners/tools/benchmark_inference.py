"""Inference speed on this machine: evaluation, cached vs uncached generation, and generation
as a graph loop vs one XLA program.

  python runners/tools/benchmark_inference.py --n_layer=4 --d_model=256 --eval_mem_len=512
  python runners/tools/benchmark_inference.py --sections=compiled --batches=1,8,32 \\
      --prompt_lens=16,512 --gen_tokens=64 --gen_mem_len=512

Builds a random model of the given shape (weights do not change speed). Sections
(`--sections`, comma-separated):
  eval: evaluates a random stream with the evaluation settings (tokens/s).
  cached: generates --gen_tokens greedy tokens after a --prompt_len prompt with the memory cache
    (one length-1 pass per token) and by re-running the whole context for every token.
  compiled: for every batch of --batches and prompt length of --prompt_lens, greedy generation
    of --gen_tokens tokens as the graph loop (`Generator.generate`, growing memory) and as one
    XLA program (`Generator.generate_compiled`, fixed memory): generated tokens/s (all rows),
    the first token's latency (a call generating one token: the prompt and one choice), the
    first call's seconds (tracing and XLA's compilations) and whether the tokens are equal.
Progress goes to stderr, one line per measurement; one JSON line goes to stdout.
"""
import json
import sys
import time

from runners import cli

cli.quiet_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

import tf_records  # noqa: E402
import txl_tf  # noqa: E402
from txl_tf.inference.evaluation import Evaluator  # noqa: E402
from txl_tf.inference.generation import Generator  # noqa: E402

FLAGS = flags.FLAGS


def define_flags():
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners)."""
    flags.DEFINE_integer("n_layer", 4, "Layers.")
    flags.DEFINE_integer("d_model", 256, "Model width.")
    flags.DEFINE_integer("n_head", 4, "Heads.")
    flags.DEFINE_integer("d_inner", 1024, "Feed-forward width.")
    flags.DEFINE_integer("n_token", 256, "Vocabulary size.")
    flags.DEFINE_integer("eval_tgt_len", 128, "Evaluation segment length (and generation's "
                         "prompt segment length).")
    flags.DEFINE_integer("eval_mem_len", 512, "Evaluation memory length.")
    flags.DEFINE_integer("eval_batch", 4, "Evaluation streams.")
    flags.DEFINE_integer("eval_steps", 10, "Evaluation segments timed (after one warm-up).")
    flags.DEFINE_integer("prompt_len", 64, "Prompt length of the cached section.")
    flags.DEFINE_integer("gen_tokens", 128, "Generated tokens.")
    flags.DEFINE_list("sections", ["eval", "cached", "compiled"], "What to measure: eval, "
                      "cached, compiled.")
    flags.DEFINE_list("batches", ["1", "8", "32"], "Batch sizes of the compiled section.")
    flags.DEFINE_list("prompt_lens", ["16", "512"], "Prompt lengths of the compiled section.")
    flags.DEFINE_integer("gen_mem_len", 512, "Memory length of the compiled section.")
    flags.DEFINE_integer("repeats", 2, "Timed calls per measurement (the best is kept).")


def progress(message):
    print(message, file=sys.stderr, flush=True)


def best_seconds(fn, repeats):
    """(the least wall seconds of `repeats` calls of fn, its last result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def evaluation(model, f, rng):
    tokens = rng.randint(0, f.n_token, size=f.eval_batch * (f.eval_steps + 1) * f.eval_tgt_len
                         + 8)
    batches = tf_records.dataset_from_tokens(tokens, f.eval_batch, f.eval_tgt_len)
    evaluator = Evaluator(model)
    evaluator.evaluate(batches.take(1), f.eval_batch, progress=False)  # trace
    result = evaluator.evaluate(batches.skip(1), f.eval_batch, f.eval_steps, progress=False)
    return {"tgt_len": f.eval_tgt_len, "mem_len": f.eval_mem_len, "batch": f.eval_batch,
            "tokens": result.tokens, "tokens_per_second": result.tokens_per_second}


def cached(model, f, rng):
    prompt = rng.randint(0, f.n_token, size=(1, f.prompt_len))
    gen = Generator(model, mem_len=f.prompt_len + f.gen_tokens)
    gen.generate(prompt, 2, temperature=0.0)  # trace
    cached_s, tokens = best_seconds(lambda: gen.generate(prompt, f.gen_tokens, temperature=0.0),
                                    1)
    gen.generate_uncached(prompt, 2, temperature=0.0)
    uncached_s, uncached_tokens = best_seconds(
        lambda: gen.generate_uncached(prompt, f.gen_tokens, temperature=0.0), 1)
    return {"prompt_len": f.prompt_len, "tokens": f.gen_tokens,
            "cached_tokens_per_second": f.gen_tokens / cached_s,
            "uncached_tokens_per_second": f.gen_tokens / uncached_s,
            "speedup": uncached_s / cached_s,
            "same_tokens": bool((tokens == uncached_tokens).all())}


def one_way(run, prompt, f):
    """{first_call_seconds, first_token_seconds, tokens_per_second} of run(prompt, n)."""
    start = time.perf_counter()
    run(prompt, 1)
    run(prompt, f.gen_tokens)
    first_call = time.perf_counter() - start
    first_token, _ = best_seconds(lambda: run(prompt, 1), f.repeats)
    seconds, tokens = best_seconds(lambda: run(prompt, f.gen_tokens), f.repeats)
    return {"first_call_seconds": round(first_call, 3),
            "first_token_seconds": round(first_token, 4),
            "tokens_per_second": round(prompt.shape[0] * f.gen_tokens / seconds, 1)}, tokens


def compiled(model, f, rng):
    """Graph loop against one XLA program, per batch and prompt length (greedy)."""
    gen = Generator(model, seg_len=f.eval_tgt_len, mem_len=f.gen_mem_len)
    rows = []
    for batch in map(int, f.batches):
        for length in map(int, f.prompt_lens):
            prompt = rng.randint(0, f.n_token, size=(batch, length)).astype(np.int32)
            graph, graph_tokens = one_way(
                lambda p, n: gen.generate(p, n, temperature=0.0), prompt, f)
            xla, xla_tokens = one_way(
                lambda p, n: gen.generate_compiled(p, n, temperature=0.0), prompt, f)
            row = {"batch": batch, "prompt_len": length, "graph_loop": graph, "compiled": xla,
                   "speedup": round(xla["tokens_per_second"] / graph["tokens_per_second"], 2),
                   "same_tokens": bool((graph_tokens == xla_tokens).all())}
            progress(json.dumps(row))
            rows.append(row)
    return {"seg_len": f.eval_tgt_len, "mem_len": f.gen_mem_len, "tokens": f.gen_tokens,
            "runs": rows}


SECTIONS = {"eval": evaluation, "cached": cached, "compiled": compiled}


def main(argv):
    del argv
    f = FLAGS
    unknown = sorted(set(f.sections) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"error: unknown --sections {unknown}; use {', '.join(SECTIONS)}.")
    config = txl_tf.TransformerXLConfig(
        n_token=f.n_token, n_layer=f.n_layer, d_model=f.d_model, n_head=f.n_head,
        d_head=f.d_model // f.n_head, d_inner=f.d_inner, tgt_len=f.eval_tgt_len,
        mem_len=f.eval_mem_len, dropout=0.0, dropatt=0.0, same_length=True)
    model = txl_tf.TransformerXL(config)
    rng = np.random.RandomState(0)
    result = {"config": {k: getattr(config, k) for k in ("n_layer", "d_model", "n_head",
                                                         "d_inner", "n_token")}}
    for name in f.sections:
        progress(f"measuring {name} ...")
        result[name] = SECTIONS[name](model, f, rng)
    result["threads"] = tf.config.threading.get_intra_op_parallelism_threads()
    result["device"] = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    print(json.dumps(result))


if __name__ == "__main__":
    define_flags()
    cli.run(main)
