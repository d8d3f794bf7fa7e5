"""Writing a split's token stream as pre-batched, per-host TFRecord files (vectorized).

Each record is a ``tf.train.Example`` with ``inputs`` and ``labels`` (int64 ``[tgt_len]``;
``labels`` is ``inputs`` shifted by one token). Host ``h``'s file holds its streams only, written
step by step, then replica by replica, then stream by stream: record
``(t * replicas_per_host + r) * per_replica_batch + b`` is step ``t`` of stream
``h * per_host_batch + r * per_replica_batch + b``. Reading the file sequentially in batches of
``per_replica_batch`` therefore yields, at every step, replica 0's batch, replica 1's batch, ...

Files are written under temporary names and renamed when complete; the metadata JSON is written
last, so a failure never leaves records that look valid.
"""
import concurrent.futures
import contextlib
import glob
import os
import time

import numpy as np

from tf_records import atomic, metadata, streams
from tf_records.example_codec import (WindowRecordEncoder, encode_varint_stream,
                                      serialize_int64_examples)
from tf_records.layout import RecordLayout

CHUNK_TOKENS = 1 << 21  # tokens (per feature) serialized at once


def _remove_stale_temps(data_dir, names):
    """Removes temporary record files a killed writer left behind (they may fill the disk)."""
    for name in names:
        for stale in glob.glob(os.path.join(glob.escape(data_dir), f".{glob.escape(name)}.*.tmp")):
            with contextlib.suppress(OSError):
                os.remove(stale)


def write_records(data_dir, split, tokens: np.ndarray, layout: RecordLayout, *, corpus_info: dict,
                  stream_sha256=None, seed=0, progress=None) -> dict:
    """Writes the records of one split for ``layout`` and returns their metadata dict.

    Args:
      data_dir: output directory.
      split: split name (``train``, ``valid``, ``test``).
      tokens: int32 ``[N]``, the split's token ids.
      layout: the :class:`RecordLayout`.
      corpus_info: the corpus-info dict (dataset, level, vocab_size, vocab_checksum, cutoffs).
      stream_sha256: sha256 of ``tokens`` (computed if None).
      seed: seed of the rotation offsets when ``layout.num_passes > 1``.
      progress: optional callable ``(done_records, total_records)``.
    """
    import tensorflow as tf

    data_dir = os.fspath(data_dir)
    atomic.ensure_dir(data_dir)
    tokens = np.asarray(tokens, np.int32)
    offsets = streams.pass_offsets(tokens.size, layout.num_passes, seed)
    matrix, num_steps = streams.stream_matrix(tokens, layout, offsets)
    info_path = os.path.join(data_dir, metadata.info_file(layout, split))
    try:
        os.remove(info_path)  # stale metadata must never describe new, partial files
    except FileNotFoundError:
        pass
    except OSError as error:
        raise (atomic.storage_error(error, info_path) or error) from None

    names = [metadata.record_file(layout, split, h) for h in range(layout.num_hosts)]
    _remove_stale_temps(data_dir, names)
    temps = []
    steps_per_chunk = max(1, CHUNK_TOKENS // (layout.per_host_batch * layout.tgt_len))
    total_records = num_steps * layout.num_streams
    done = 0
    start = time.time()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        for host, name in enumerate(names):
            tmp = atomic.new_temp(data_dir, name)
            temps.append(tmp)
            host_streams = streams.host_streams(layout, host)

            def serialize(begin, end):
                """Records of steps [begin, end) of this host's streams, in (step, stream) order."""
                t = layout.tgt_len
                if layout.last_segment == "drop":  # fast path: each token varint-encoded once
                    block = matrix[host_streams, begin * t: end * t + 1]
                    encoder = WindowRecordEncoder(*encode_varint_stream(block))
                    steps = np.arange(end - begin)[:, None] * t
                    starts = (np.arange(len(host_streams))[None, :] * block.shape[1] + steps).reshape(-1)
                    # Records are assembled lazily in the writing thread: this worker only runs
                    # numpy code (which releases the GIL), so the two threads overlap.
                    return encoder.records(starts, t), len(starts)
                inputs, labels = streams.step_windows(matrix, t, begin, end, host_streams)
                buf, offs = serialize_int64_examples({"inputs": inputs.reshape(-1, t),
                                                      "labels": labels.reshape(-1, t)})
                data = buf.tobytes()
                return (data[offs[j]:offs[j + 1]] for j in range(len(offs) - 1)), len(offs) - 1

            bounds = [(b, min(b + steps_per_chunk, num_steps)) for b in range(0, num_steps, steps_per_chunk)]
            with tf.io.TFRecordWriter(tmp) as w:
                future = pool.submit(serialize, *bounds[0])
                for i in range(len(bounds)):
                    records, count = future.result()
                    if i + 1 < len(bounds):  # encode the next chunk while this one is written
                        future = pool.submit(serialize, *bounds[i + 1])
                    write = w.write
                    for record in records:
                        write(record)
                    done += count
                    if progress:
                        progress(done, total_records)
        for tmp, name in zip(temps, names):
            os.replace(tmp, os.path.join(data_dir, name))
        temps = []
    except (OSError, tf.errors.OpError) as error:  # disk full or read-only: one clear error
        translated = atomic.storage_error(error, os.path.join(data_dir, names[max(len(temps), 1) - 1]))
        if translated is None:
            raise
        raise translated from None
    finally:
        pool.shutdown()
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)

    paths = [os.path.join(data_dir, n) for n in names]
    num_labels = int(num_steps * layout.num_streams * layout.tgt_len)
    if layout.last_segment == "pad":
        num_labels = int((streams.step_windows(matrix, layout.tgt_len, 0, num_steps)[1] >= 0).sum())
    meta = {
        "format": metadata.FORMAT,
        "dataset": corpus_info["dataset"],
        "split": split,
        "level": corpus_info["level"],
        "vocab_size": corpus_info["vocab_size"],
        "vocab_checksum": corpus_info["vocab_checksum"],
        "cutoffs": corpus_info["cutoffs"],
        **layout.to_dict(),
        "per_host_batch": layout.per_host_batch,
        "num_streams": layout.num_streams,
        "pass_offsets": offsets,
        "pass_seed": seed,
        "num_steps": int(num_steps),
        "stream_length": int(matrix.shape[1]),
        "num_tokens": int(tokens.size),
        "num_labels": num_labels,
        "tokens_dropped": int(tokens.size * layout.num_passes - num_labels),
        "stream_sha256": stream_sha256 or streams.tokens_sha256(tokens),
        "files": [[n] for n in names],
        "file_bytes": {n: os.path.getsize(p) for n, p in zip(names, paths)},
        "file_sha256": {n: metadata.file_sha256(p) for n, p in zip(names, paths)},
        "records_per_host": int(num_steps * layout.per_host_batch),
        "write_seconds": round(time.time() - start, 3),
        # corpus facts worth having beside the records (builtin: which Python made the corpus)
        **{k: corpus_info[k] for k in ("python_version", "best_loss_nats") if k in corpus_info},
    }
    atomic.write_json(info_path, meta)
    return meta
