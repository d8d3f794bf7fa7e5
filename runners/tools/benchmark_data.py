"""Data pipeline speed: building records from a 100 MB byte corpus (MB/s) and reading them (tokens/s).

  python runners/tools/benchmark_data.py [--megabytes=100] [--tgt_len=512] [--per_replica_batch=22]

Wall-clock figures depend on other load on the machine; the JSON also gives process CPU seconds
and the 1-minute load average. The corpus is the built-in one (Python standard library source bytes) repeated to --megabytes,
written as a text file and prepared as ``--dataset=text --level=byte`` (so the figure includes
reading the file, the vocabulary, the token cache, the records and their checksums). Prints one
JSON line.
"""
import json
import os
import shutil
import tempfile
import time

from absl import app, flags

import tf_records
from tf_records.corpora.builtin import stdlib_bytes

FLAGS = flags.FLAGS
flags.DEFINE_integer("megabytes", 100, "Corpus size in MB (10^6 bytes).")
flags.DEFINE_integer("tgt_len", 512, "Segment length.")
flags.DEFINE_integer("per_replica_batch", 22, "Streams per replica.")
flags.DEFINE_integer("replicas_per_host", 1, "Replicas per host.")
flags.DEFINE_integer("read_steps", 2000, "Steps to read for the reader figure.")
flags.DEFINE_string("work_dir", None, "Scratch directory (default: a temporary one, removed).")


def main(argv):
    del argv
    import numpy as np

    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="txl-bench-data-")
    try:
        size = FLAGS.megabytes * 1_000_000
        base, _ = stdlib_bytes()
        corpus = np.resize(base, size)
        text_path = os.path.join(work, "corpus.txt")
        corpus.tofile(text_path)
        layout = tf_records.RecordLayout(tgt_len=FLAGS.tgt_len, per_replica_batch=FLAGS.per_replica_batch,
                                         replicas_per_host=FLAGS.replicas_per_host)
        import tensorflow as tf  # noqa: F401  (imported before timing)

        data_dir = os.path.join(work, "data")
        start, cpu_start = time.time(), time.process_time()
        tf_records.prepare("text", data_dir, layouts={"train": layout}, raw_path=text_path,
                           level="byte", eval_fraction=0.0001, progress=False)
        prepare_seconds, prepare_cpu = time.time() - start, time.process_time() - cpu_start

        from tf_records import stream_cache, writer
        tokens = stream_cache.load(data_dir, "train")
        info = tf_records.read_corpus_info(data_dir)
        start, cpu_start = time.time(), time.process_time()
        writer.write_records(os.path.join(work, "again"), "train", tokens, layout, corpus_info=info,
                             stream_sha256="not-needed-for-timing")
        write_seconds, write_cpu = time.time() - start, time.process_time() - cpu_start

        ds = tf_records.make_input_fn(data_dir, "train", layout, repeat=True)()
        it = iter(ds)
        for _ in range(50):  # warm up
            next(it)
        start = time.time()
        for _ in range(FLAGS.read_steps):
            next(it)
        read_seconds = time.time() - start
        tokens_read = FLAGS.read_steps * FLAGS.per_replica_batch * FLAGS.tgt_len
        print(json.dumps({
            "corpus_megabytes": FLAGS.megabytes,
            "tgt_len": FLAGS.tgt_len, "per_replica_batch": FLAGS.per_replica_batch,
            "prepare_end_to_end_seconds": round(prepare_seconds, 2),
            "prepare_end_to_end_MB_per_s": round(size / 1e6 / prepare_seconds, 1),
            "prepare_end_to_end_cpu_seconds": round(prepare_cpu, 2),
            "write_records_seconds": round(write_seconds, 2),
            "write_records_cpu_seconds": round(write_cpu, 2),
            "write_records_MB_per_s": round(tokens.size / 1e6 / write_seconds, 1),
            "read_tokens_per_s": round(tokens_read / read_seconds),
            "cpu_count": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
        }))
    finally:
        if not FLAGS.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
