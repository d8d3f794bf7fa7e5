"""Writing a split's token stream as pre-batched, per-host TFRecord files (vectorized).

Each record is a `tf.train.Example` with `inputs` and `labels` (int64 `[tgt_len]`;
`labels` is `inputs` shifted by one token). Host `h`'s file holds its streams only, written
step by step, then replica by replica, then stream by stream: record
`(t * replicas_per_host + r) * per_replica_batch + b` is step `t` of stream
`h * per_host_batch + r * per_replica_batch + b`. Reading the file sequentially in batches of
`per_replica_batch` therefore yields, at every step, replica 0's batch, replica 1's batch, ...

Files are written under temporary names and renamed when complete; the metadata JSON is written
last, so a failure never leaves records that look valid.
"""
import concurrent.futures
import dataclasses
import os
import time

import numpy as np

from tf_records import atomic
from tf_records.corpus_info import FORMAT
from tf_records.records import metadata, streams
from tf_records.records.example_codec import (WindowRecordEncoder, encode_varint_stream,
                                      serialize_int64_examples)
from tf_records.records.layout import RecordLayout

CHUNK_TOKENS = 1 << 21  # tokens (per feature) serialized at once


def _clear_metadata(info_path):
    """Removes the metadata of earlier records: it must never describe new, partial files."""
    try:
        os.remove(info_path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise (atomic.storage_error(error, info_path) or error) from None


def _chunk_serializer(matrix, layout: RecordLayout, host: int):
    """`serialize(begin, end) -> (records, count)`: the records of steps [begin, end) of
    `host`'s streams, in (step, stream) order."""
    host_streams = streams.host_streams(layout, host)
    t = layout.tgt_len

    def serialize(begin, end):
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

    return serialize


def _write_file(path, serialize, bounds, pool, on_written):
    """Writes the chunks `bounds` to the TFRecord file `path`, encoding the next chunk in
    `pool` while one is written; `on_written(count)` after each chunk."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as w:
        future = pool.submit(serialize, *bounds[0])
        for i in range(len(bounds)):
            records, count = future.result()
            if i + 1 < len(bounds):
                future = pool.submit(serialize, *bounds[i + 1])
            write = w.write
            for record in records:
                write(record)
            on_written(count)


def _write_host_files(data_dir, names, matrix, num_steps, layout, progress):
    """Writes every host's file under a temporary name; all are renamed once all are written."""
    import tensorflow as tf

    for name in names:
        atomic.remove_stale_temps(data_dir, name)
    steps_per_chunk = max(1, CHUNK_TOKENS // (layout.per_host_batch * layout.tgt_len))
    bounds = [(b, min(b + steps_per_chunk, num_steps))
              for b in range(0, num_steps, steps_per_chunk)]
    total_records, done = num_steps * layout.num_streams, [0]

    def on_written(count):
        done[0] += count
        if progress:
            progress(done[0], total_records)

    paths = [os.path.join(data_dir, n) for n in names]
    with concurrent.futures.ThreadPoolExecutor(1) as pool, atomic.atomic_paths(
            paths, errors=(OSError, tf.errors.OpError)) as temps:
        for host, tmp in enumerate(temps):
            _write_file(tmp, _chunk_serializer(matrix, layout, host), bounds, pool, on_written)
    return paths


def _num_labels(matrix, num_steps, layout: RecordLayout) -> int:
    if layout.last_segment == "pad":
        return int((streams.step_windows(matrix, layout.tgt_len, 0, num_steps)[1] >= 0).sum())
    return int(num_steps * layout.num_streams * layout.tgt_len)


@dataclasses.dataclass(frozen=True)
class _Cut:
    """A split's tokens cut for a layout: the stream matrix (int32 [S, T], S = num_streams),
    its number of steps, and the rotation offsets of its passes with their seed."""
    matrix: np.ndarray
    num_steps: int
    pass_offsets: list
    pass_seed: int


def _metadata(split, tokens, layout, corpus_info, cut: _Cut, files: dict,
              stream_sha256) -> dict:
    """The metadata dict of the records (see `tf_records.records.metadata`); `files`:
    {file name: path}, hosts in order."""
    matrix, num_steps = cut.matrix, cut.num_steps
    num_labels = _num_labels(matrix, num_steps, layout)
    return {
        "format": FORMAT,
        **{k: corpus_info[k] for k in ("dataset", "level", "vocab_size", "vocab_checksum",
                                       "cutoffs")},
        "split": split,
        **layout.to_dict(),
        "per_host_batch": layout.per_host_batch,
        "num_streams": layout.num_streams,
        "pass_offsets": cut.pass_offsets,
        "pass_seed": cut.pass_seed,
        "num_steps": int(num_steps),
        "stream_length": int(matrix.shape[1]),
        "num_tokens": int(tokens.size),
        "num_labels": num_labels,
        "tokens_dropped": int(tokens.size * layout.num_passes - num_labels),
        "stream_sha256": stream_sha256 or streams.tokens_sha256(tokens),
        "files": [[n] for n in files],
        "file_bytes": {n: os.path.getsize(p) for n, p in files.items()},
        "file_sha256": {n: metadata.file_sha256(p) for n, p in files.items()},
        "records_per_host": int(num_steps * layout.per_host_batch),
        # corpus facts worth having beside the records (builtin: which Python made the corpus)
        **{k: corpus_info[k] for k in ("python_version", "best_loss_nats") if k in corpus_info},
    }


def write_records(data_dir, split, tokens: np.ndarray, layout: RecordLayout, *, corpus_info: dict,
                  stream_sha256=None, seed=0, progress=None) -> dict:
    """Writes the records of one split for `layout` and returns their metadata dict.

    Args:
      data_dir: output directory.
      split: split name (`train`, `valid`, `test`).
      tokens: int32 `[N]`, the split's token ids.
      layout: the `RecordLayout`.
      corpus_info: the corpus-info dict (dataset, level, vocab_size, vocab_checksum, cutoffs).
      stream_sha256: sha256 of `tokens` (computed if None).
      seed: seed of the rotation offsets when `layout.num_passes > 1`.
      progress: optional callable `(done_records, total_records)`.

    Returns:
      The metadata dict, also written to `data_dir/record_info-<basename>.json`.

    Raises:
      StorageError: the disk is full or `data_dir` is read-only (nothing is left half-written).
    """
    start = time.time()
    data_dir = os.fspath(data_dir)
    atomic.ensure_dir(data_dir)
    tokens = np.asarray(tokens, np.int32)
    offsets = streams.pass_offsets(tokens.size, layout.num_passes, seed)
    matrix, num_steps = streams.stream_matrix(tokens, layout, offsets)
    info_path = os.path.join(data_dir, metadata.info_file(layout, split))
    _clear_metadata(info_path)
    names = [metadata.record_file(layout, split, h) for h in range(layout.num_hosts)]
    paths = _write_host_files(data_dir, names, matrix, num_steps, layout, progress)
    meta = _metadata(split, tokens, layout, corpus_info, _Cut(matrix, num_steps, offsets, seed),
                     dict(zip(names, paths)), stream_sha256)
    meta["write_seconds"] = round(time.time() - start, 3)
    meta["info_sha256"] = metadata.info_checksum(meta)
    atomic.write_json(info_path, meta)
    return meta
