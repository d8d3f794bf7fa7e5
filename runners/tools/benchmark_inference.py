"""Inference speed on this machine: evaluation tokens/s and cached vs uncached generation.

  python runners/tools/benchmark_inference.py --n_layer=4 --d_model=256 --eval_mem_len=512

Builds a random model of the given shape (weights do not change speed), evaluates a random
stream with the evaluation settings, and generates --gen_tokens tokens after a --prompt_len
prompt twice: with the memory cache (one length-1 pass per token) and by re-running the whole
context for every token. Prints one JSON line.
"""
import json
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
    flags.DEFINE_integer("eval_tgt_len", 128, "Evaluation segment length.")
    flags.DEFINE_integer("eval_mem_len", 512, "Evaluation memory length.")
    flags.DEFINE_integer("eval_batch", 4, "Evaluation streams.")
    flags.DEFINE_integer("eval_steps", 10, "Evaluation segments timed (after one warm-up).")
    flags.DEFINE_integer("prompt_len", 64, "Generation prompt length.")
    flags.DEFINE_integer("gen_tokens", 128, "Generated tokens.")


def main(argv):
    del argv
    f = FLAGS
    config = txl_tf.TransformerXLConfig(
        n_token=f.n_token, n_layer=f.n_layer, d_model=f.d_model, n_head=f.n_head,
        d_head=f.d_model // f.n_head, d_inner=f.d_inner, tgt_len=f.eval_tgt_len,
        mem_len=f.eval_mem_len, dropout=0.0, dropatt=0.0, same_length=True)
    model = txl_tf.TransformerXL(config)
    rng = np.random.RandomState(0)
    tokens = rng.randint(0, f.n_token, size=f.eval_batch * (f.eval_steps + 1) * f.eval_tgt_len + 8)
    batches = tf_records.dataset_from_tokens(tokens, f.eval_batch, f.eval_tgt_len)
    evaluator = Evaluator(model)
    evaluator.evaluate(batches.take(1), f.eval_batch, progress=False)  # trace
    result = evaluator.evaluate(batches.skip(1), f.eval_batch, f.eval_steps, progress=False)

    prompt = rng.randint(0, f.n_token, size=(1, f.prompt_len))
    gen = Generator(model, mem_len=f.prompt_len + f.gen_tokens)
    gen.generate(prompt, 2, temperature=0.0)  # trace
    start = time.time()
    cached = gen.generate(prompt, f.gen_tokens, temperature=0.0)
    cached_s = time.time() - start
    gen.generate_uncached(prompt, 2, temperature=0.0)
    start = time.time()
    uncached = gen.generate_uncached(prompt, f.gen_tokens, temperature=0.0)
    uncached_s = time.time() - start
    print(json.dumps({
        "config": {k: getattr(config, k) for k in ("n_layer", "d_model", "n_head", "d_inner",
                                                   "n_token")},
        "eval": {"tgt_len": f.eval_tgt_len, "mem_len": f.eval_mem_len, "batch": f.eval_batch,
                 "tokens": result.tokens, "tokens_per_second": result.tokens_per_second},
        "generate": {"prompt_len": f.prompt_len, "tokens": f.gen_tokens,
                     "cached_tokens_per_second": f.gen_tokens / cached_s,
                     "uncached_tokens_per_second": f.gen_tokens / uncached_s,
                     "speedup": uncached_s / cached_s,
                     "same_tokens": bool((cached == uncached).all())},
        "threads": tf.config.threading.get_intra_op_parallelism_threads()}))


if __name__ == "__main__":
    define_flags()
    cli.run(main)
