"""The measurements of `runners/tools/benchmark_inference.py` (its docstring is the user's
guide): evaluation, cached vs uncached generation, generation as a graph loop vs one XLA
program, and the SavedModel in TF Serving's loader; progress to stderr, one JSON line to stdout.
"""
import json
import os
import sys
import tempfile
import time

from runners import cli

cli.quiet_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

import tf_records  # noqa: E402
import txl_tf  # noqa: E402
from txl_tf.serving.saved_model_writer import export_built_model  # noqa: E402
from txl_tf.serving.export_options import ExportOptions  # noqa: E402
from txl_tf.inference.evaluation import Evaluator  # noqa: E402
from txl_tf.serving.limits import ServingLimits  # noqa: E402
from txl_tf.generation.generator import Generator  # noqa: E402
from txl_tf.generation.call_bounds import GENERATION_RANGES  # noqa: E402
from txl_tf.runtime.ranges import INT32_MAX, Range  # noqa: E402
from runners.cli import flag_ranges  # noqa: E402
from runners.cli.flag_ranges import define_integer  # noqa: E402

MODEL = txl_tf.TransformerXLConfig.RANGES

FLAGS = flags.FLAGS


def define_flags():
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners)."""
    define_integer("n_layer", 4, "Layers.", MODEL["n_layer"])
    define_integer("d_model", 256, "Model width.", MODEL["d_model"])
    define_integer("n_head", 4, "Heads.", MODEL["n_head"])
    define_integer("d_inner", 1024, "Feed-forward width.", MODEL["d_inner"])
    define_integer("n_token", 256, "Vocabulary size.", MODEL["n_token"])
    define_integer("eval_tgt_len", 128, "Evaluation segment length (and generation's "
                   "prompt segment length).", MODEL["tgt_len"])
    define_integer("eval_mem_len", 512, "Evaluation memory length.", MODEL["mem_len"])
    define_integer("eval_batch", 4, "Evaluation streams.", (1, 2**20, "streams"))
    define_integer("eval_steps", 10, "Evaluation segments timed (after one warm-up).",
                   (1, 100_000, "segments"))
    define_integer("prompt_len", 64, "Prompt length of the cached section.",
                   (1, INT32_MAX, "tokens"))
    define_integer("gen_tokens", 128, "Generated tokens.",
                   GENERATION_RANGES["num_tokens"])
    flags.DEFINE_list("sections", ["eval", "cached", "compiled"], "What to measure: eval, "
                      "cached, compiled, serving.")
    flags.DEFINE_list("batches", ["1", "8", "32"], "Batch sizes of the compiled section.")
    flag_ranges.attach(FLAGS, "batches", Range(1, 2**20, "rows"))
    flags.DEFINE_list("prompt_lens", ["16", "512"], "Prompt lengths of the compiled section.")
    flag_ranges.attach(FLAGS, "prompt_lens", Range(1, INT32_MAX, "tokens"))
    define_integer("gen_mem_len", 512, "Memory length of the compiled section.",
                   (1, INT32_MAX, "generation keeps the context in the memory"))
    define_integer("repeats", 2, "Timed calls per measurement (the best is kept).",
                   (1, 1000, "calls"))


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


def session_signatures(path):
    """(session, signature_defs) of the SavedModel at `path`, loaded as TF Serving does."""
    session = tf.compat.v1.Session(graph=tf.Graph())
    meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
    return session, meta.signature_def


def request(session, signature, feeds):
    """One Session.run of `signature` with {input name: array}."""
    return session.run({k: v.name for k, v in signature.outputs.items()},
                       {signature.inputs[k].name: v for k, v in feeds.items()})


def served(path, f, rng):
    """{batch, prompt_len, generate_seconds, score_seconds} of every batch and prompt."""
    session, signatures = session_signatures(path)
    rows = []
    for batch in map(int, f.batches):
        for length in map(int, f.prompt_lens):
            prompt = rng.randint(0, f.n_token, size=(batch, length)).astype(np.int32)
            settings = dict(num_tokens=np.full([batch], f.gen_tokens, np.int32),
                            temperature=np.zeros([batch], np.float32),
                            top_k=np.zeros([batch], np.int32), top_p=np.ones([batch], np.float32),
                            seed=np.zeros([batch], np.int64))
            generate = lambda: request(session, signatures["generate"],  # noqa: E731
                                       dict(prompt=prompt, **settings))
            mems = request(session, signatures["init_mems"],
                           dict(streams=np.zeros([batch], np.int32)))["mems"]
            score = lambda: request(session, signatures["score"],  # noqa: E731
                                    dict(tokens=prompt, mems=mems))
            start = time.perf_counter()
            tokens = generate()["tokens"]
            first = time.perf_counter() - start
            score()
            generate_s, _ = best_seconds(generate, f.repeats)
            score_s, _ = best_seconds(score, f.repeats)
            row = {"batch": batch, "prompt_len": length, "first_call_seconds": round(first, 3),
                   "generate_seconds": round(generate_s, 4),
                   "generate_tokens_per_second": round(batch * f.gen_tokens / generate_s, 1),
                   "score_seconds": round(score_s, 4), "tokens": tokens[:, :f.gen_tokens]}
            progress(json.dumps({k: v for k, v in row.items() if k != "tokens"}))
            rows.append(row)
    session.close()
    return rows


def serving(model, f, rng):
    """The generate and score signatures' latency in the session loader, graph loop against
    one XLA program."""
    longest = max(map(int, f.prompt_lens))
    limits = ServingLimits(max_seq_len=longest, max_num_tokens=f.gen_tokens,
                           max_batch_size=max(map(int, f.batches)),
                           max_request_tokens=max(map(int, f.batches)) * (longest + f.gen_tokens))
    out = {"gen_mem_len": f.gen_mem_len, "mem_len": f.eval_mem_len, "seg_len": f.eval_tgt_len,
           "tokens": f.gen_tokens}
    with tempfile.TemporaryDirectory(prefix="txl-benchmark-export-") as root:
        runs = {}
        for name, jit in (("graph_loop", "false"), ("compiled", "true")):
            options = ExportOptions(export_dir=os.path.join(root, name), mem_len=f.eval_mem_len,
                                    gen_mem_len=f.gen_mem_len, gen_seg_len=f.eval_tgt_len,
                                    text_signatures=False, warmup_requests=0,
                                    gen_jit_compile=jit)
            path = export_built_model(model, options, limits)["export_path"]
            progress(f"serving: {name} exported")
            runs[name] = served(path, f, np.random.RandomState(1))
    for graph, xla in zip(runs["graph_loop"], runs["compiled"]):
        graph["same_tokens"] = xla["same_tokens"] = bool((graph.pop("tokens")
                                                          == xla.pop("tokens")).all())
    out.update(runs)
    return out


SECTIONS = {"eval": evaluation, "cached": cached, "compiled": compiled, "serving": serving}


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

