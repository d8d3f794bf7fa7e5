"""The measurements of `runners/tools/benchmark_data.py` (its docstring is the user's guide):
records built from a byte corpus of --megabytes (MB/s) and read back (tokens/s), one JSON line.
"""
import json
import os
import shutil
import tempfile
import time

from runners import cli

cli.quiet_start()

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

import tf_records  # noqa: E402
from runners.cli import flag_ranges  # noqa: E402
from txl_tf.runtime.ranges import INT32_MAX  # noqa: E402
from tf_records.records import stream_cache, writer  # noqa: E402
from tf_records.corpora.builtin import stdlib_bytes  # noqa: E402

FLAGS = flags.FLAGS
_LAYOUT = tf_records.RecordLayout.RANGES
flag_ranges.define_integer("megabytes", 100, "Corpus size in MB (10^6 bytes).",
                           (1, 4096, "the corpus is held in memory as int32 tokens"))
flag_ranges.define_integer("tgt_len", 512, "Segment length.", _LAYOUT["tgt_len"])
flag_ranges.define_integer("per_replica_batch", 22, "Streams per replica.",
                           _LAYOUT["per_replica_batch"])
flag_ranges.define_integer("replicas_per_host", 1, "Replicas per host.",
                           _LAYOUT["replicas_per_host"])
flag_ranges.define_integer("read_steps", 2000, "Steps to read for the reader figure.",
                           (1, INT32_MAX, "steps"))
flags.DEFINE_string("work_dir", None, "Scratch directory (default: a temporary one, removed).")


def _timed(fn):
    """(wall seconds, process CPU seconds) of fn()."""
    start, cpu_start = time.time(), time.process_time()
    fn()
    return time.time() - start, time.process_time() - cpu_start


def _read_tokens_per_s(data_dir, layout):
    """Tokens/s of the record reader after 50 warm-up steps."""
    it = iter(tf_records.make_input_fn(data_dir, "train", layout, repeat=True)())
    for _ in range(50):
        next(it)
    start = time.time()
    for _ in range(FLAGS.read_steps):
        next(it)
    return FLAGS.read_steps * FLAGS.per_replica_batch * FLAGS.tgt_len / (time.time() - start)


def measure(work):
    """The figures of a corpus of --megabytes prepared and read in the directory `work`."""
    size = FLAGS.megabytes * 1_000_000
    text_path = os.path.join(work, "corpus.txt")
    np.resize(stdlib_bytes()[0], size).tofile(text_path)
    layout = tf_records.RecordLayout(tgt_len=FLAGS.tgt_len,
                                     per_replica_batch=FLAGS.per_replica_batch,
                                     replicas_per_host=FLAGS.replicas_per_host)
    data_dir = os.path.join(work, "data")
    prepare_seconds, prepare_cpu = _timed(lambda: tf_records.prepare(
        "text", data_dir, tf_records.RecordPlan({"train": layout}), raw_path=text_path, level="byte",
        eval_fraction=0.0001, progress=False))
    tokens = stream_cache.load(data_dir, "train")
    info = tf_records.read_corpus_info(data_dir)
    write_seconds, write_cpu = _timed(lambda: writer.write_records(
        os.path.join(work, "again"), "train", tokens, layout, corpus_info=info,
        stream_sha256="not-needed-for-timing"))
    return {
        "corpus_megabytes": FLAGS.megabytes,
        "tgt_len": FLAGS.tgt_len, "per_replica_batch": FLAGS.per_replica_batch,
        "prepare_end_to_end_seconds": round(prepare_seconds, 2),
        "prepare_end_to_end_MB_per_s": round(size / 1e6 / prepare_seconds, 1),
        "prepare_end_to_end_cpu_seconds": round(prepare_cpu, 2),
        "write_records_seconds": round(write_seconds, 2),
        "write_records_cpu_seconds": round(write_cpu, 2),
        "write_records_MB_per_s": round(tokens.size / 1e6 / write_seconds, 1),
        "read_tokens_per_s": round(_read_tokens_per_s(data_dir, layout)),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="txl-bench-data-")
    try:
        print(json.dumps(measure(work)))
    finally:
        if not FLAGS.work_dir:
            shutil.rmtree(work, ignore_errors=True)

