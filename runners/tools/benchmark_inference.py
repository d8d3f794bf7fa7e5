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
  serving: the SavedModel of `export.py` (id signatures, --gen_mem_len, segments of
    --eval_tgt_len) loaded as TF Serving loads it (`tf.compat.v1` Session and
    `saved_model.loader.load`), exported with the generate signature as the graph loop and as
    one XLA program (`--gen_jit_compile`): per batch and prompt length, the latency of a
    `generate` request of --gen_tokens greedy tokens and of a `score` request of the prompt
    (memory of --eval_mem_len), after one warm-up request each.
Progress goes to stderr, one line per measurement; one JSON line goes to stdout.
"""
from runners import cli

cli.quiet_start()

from runners.tools.benchmarks import inference_speed  # noqa: E402  (the measurements)

if __name__ == "__main__":
    inference_speed.define_flags()
    cli.run(inference_speed.main)
