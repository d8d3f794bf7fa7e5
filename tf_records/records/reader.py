"""Reading pre-batched records (or in-memory token streams) as per-replica batches.

Every dataset made here yields dicts `{"inputs": int32 [B, Q], "labels": int32 [B, Q]}` with
B = per_replica_batch and Q = tgt_len (batch-major, static shapes) in the order step 0 / replica 0,
step 0 / replica 1, ..., step 1 / replica 0, ... for the host's local replicas. With
`tf.distribute.Strategy.distribute_datasets_from_function`, a host's input pipeline hands its
consecutive elements to its local replicas in order, so replica `r` receives its own streams at
every step (a test checks this with `MirroredStrategy` on two logical CPUs). There is no
shuffling inside a stream; the order is deterministic.
"""
import dataclasses
from typing import Optional, Sequence

import numpy as np

from tf_records.records import metadata, store, streams
from tf_records.errors import DataError, LayoutError
from tf_records.records.layout import RecordLayout


def _host_index(input_context, num_hosts, num_replicas):
    if input_context is None:
        if num_hosts != 1:
            raise LayoutError(f"the records are laid out for {num_hosts} hosts; pass the "
                              "tf.distribute.InputContext (use strategy.distribute_datasets_from_function).")
        return 0
    if input_context.num_input_pipelines != num_hosts:
        raise LayoutError(
            f"the strategy has {input_context.num_input_pipelines} input pipelines (hosts/workers) but "
            f"the records are laid out for num_hosts={num_hosts}; rebuild the records with "
            f"--num_hosts={input_context.num_input_pipelines}.")
    if input_context.num_replicas_in_sync != num_replicas:
        raise LayoutError(
            f"the strategy has {input_context.num_replicas_in_sync} replicas in sync but the records are "
            f"laid out for {num_replicas} (num_hosts x replicas_per_host); rebuild the records with "
            f"--replicas_per_host={input_context.num_replicas_in_sync // max(num_hosts, 1)}.")
    return input_context.input_pipeline_id


def _finish(ds, elements_per_step, num_steps, repeat, start_step):
    """Start at `start_step` (wrapping when `repeat`), repeat, deterministic order, prefetch."""
    import tensorflow as tf

    if start_step < 0:
        raise DataError(f"start_step must be >= 0, got {start_step}.")
    if not repeat and start_step >= num_steps:
        raise DataError(f"start_step={start_step} is past the end of the split ({num_steps} steps) "
                        "and repeat=False.")
    skip = (start_step % num_steps) * elements_per_step
    if repeat:
        ds = ds.repeat()
    if skip:
        ds = ds.skip(skip)
    options = tf.data.Options()
    options.deterministic = True
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


def _host_batches(paths, layout: RecordLayout):
    """The records of one host's files as batches {"inputs", "labels"} int32 [B, Q]."""
    import tensorflow as tf

    spec = {name: tf.io.FixedLenFeature([layout.tgt_len], tf.int64)
            for name in ("inputs", "labels")}

    def parse(serialized):
        feats = tf.io.parse_example(serialized, spec)
        return {k: tf.cast(v, tf.int32) for k, v in feats.items()}

    ds = tf.data.TFRecordDataset(paths, buffer_size=8 << 20)
    ds = ds.batch(layout.per_replica_batch, drop_remainder=True)
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def make_input_fn(data_dir, split, layout: RecordLayout, repeat=True, start_step=0,
                  vocab_size=None, verify="checksum"):
    """The input function of the records of `split`, for `distribute_datasets_from_function`.

    Args:
      data_dir: directory written by `tf_records.prepare`.
      split: `train` / `valid` / `test`.
      layout: the run's `RecordLayout`; records must have been made for exactly this layout.
      repeat: repeat forever (training); False yields each step once (evaluation).
      start_step: the global step to start at (all replicas' streams at that step); wraps around
        the split's `num_steps` when `repeat`.
      vocab_size: if given, must equal the records' vocabulary size.
      verify: how each host checks its own files before reading: `"checksum"` (sha256, default),
        `"size"` or `"none"`. With one host the check runs here (damaged files raise
        RecordsCorruptError before anything is built); with several, in each host's
        `input_fn`.

    Returns:
      `input_fn(input_context=None) -> tf.data.Dataset` yielding `{"inputs", "labels"}`:
      int32 `[B, Q]` (B = per_replica_batch, Q = tgt_len), static shapes, one element per
      local replica per step, in replica order. The host index is
      `input_context.input_pipeline_id`; `input_context.num_input_pipelines` must equal
      `layout.num_hosts`. The metadata dict is `input_fn.metadata`.

    Raises:
      RecordsNotFoundError, RecordsMismatchError: no records for `layout` (the message holds
        the command that makes them).
      RecordsCorruptError: a damaged file (with one host, before anything is built).

    Example:

    ```python
    input_fn = make_input_fn("data/builtin", "train", RecordLayout(64, 16))
    batch = next(iter(input_fn()))  # {"inputs": [16, 64], "labels": [16, 64]}
    ```
    """
    meta = store.find_records(data_dir, split, layout, vocab_size=vocab_size, verify="none")
    return records_input_fn(data_dir, split, layout, meta, repeat=repeat,
                            start_step=start_step, verify=verify)


def records_input_fn(data_dir, split, layout: RecordLayout, meta: dict, repeat=True,
                     start_step=0, verify="checksum"):
    """The input function of records already found (`make_input_fn` once they are found).

    Args:
      data_dir, split, layout, repeat, start_step, verify: as in `make_input_fn`.
      meta: their metadata dict (`tf_records.records.store.find_records`).

    Returns:
      `input_fn(input_context=None) -> tf.data.Dataset`, as `make_input_fn`.
    """
    # With several hosts only this host's files need to be here: each host's input_fn verifies
    # its own files. With one host they are verified now, before anything is built on them.
    command = metadata.prepare_command(data_dir, split, layout)
    checked = set()  # hosts whose files were verified and not read since
    if verify != "none" and layout.num_hosts == 1:
        metadata.verify_host_files(meta, 0, checksum=(verify == "checksum"), command=command)
        checked.add(0)

    def input_fn(input_context=None):
        host = _host_index(input_context, layout.num_hosts, layout.num_replicas)
        if verify != "none" and host not in checked:
            metadata.verify_host_files(meta, host, checksum=(verify == "checksum"), command=command)
        checked.discard(host)  # a later dataset (e.g. each evaluation) verifies again
        ds = _host_batches(meta["paths"][host], layout)
        return _finish(ds, layout.replicas_per_host, meta["num_steps"], repeat, start_step)

    input_fn.metadata = meta
    return input_fn


@dataclasses.dataclass(frozen=True)
class TokenReading:
    """What `dataset_from_tokens` yields of a layout's streams, and from where.

    Attributes:
      host: which host's streams to yield.
      repeat, start_step: as in `make_input_fn`.
      pass_offsets: rotation offsets of the passes (None: the seeded ones of
        `streams.pass_offsets`, those of records written with seed 0).
    """
    host: int = 0
    repeat: bool = False
    start_step: int = 0
    pass_offsets: Optional[Sequence[int]] = None


def dataset_from_tokens(tokens, per_replica_batch, tgt_len, replicas_per_host=1, num_hosts=1,
                        last_segment="drop", num_passes=1,
                        reading: TokenReading = TokenReading()):
    """An in-memory dataset with exactly the element order of the records for the same layout.

    Args:
      tokens: int `[N]` token ids (e.g. `tokenize_text` of an arbitrary text file).
      per_replica_batch, tgt_len, replicas_per_host, num_hosts, last_segment, num_passes: as in
        `RecordLayout`.
      reading: which host's streams, from which step, repeated or not, with which rotation
        offsets (`TokenReading`).

    Returns:
      A `tf.data.Dataset` of `{"inputs", "labels"}`, int32 `[B, Q]` (B = per_replica_batch,
      Q = tgt_len); `dataset.num_steps` holds the number of steps.
    """
    import tensorflow as tf

    layout = RecordLayout(tgt_len=tgt_len, per_replica_batch=per_replica_batch,
                          replicas_per_host=replicas_per_host, num_hosts=num_hosts,
                          num_passes=num_passes, last_segment=last_segment)
    tokens = np.asarray(tokens, np.int32)
    pass_offsets = reading.pass_offsets
    if pass_offsets is None:
        pass_offsets = streams.pass_offsets(tokens.size, num_passes)
    matrix, num_steps = streams.stream_matrix(tokens, layout, pass_offsets)
    inputs, labels = streams.step_windows(matrix, tgt_len, 0, num_steps,
                                          streams.host_streams(layout, reading.host))
    shape = [num_steps * replicas_per_host, per_replica_batch, tgt_len]
    ds = tf.data.Dataset.from_tensor_slices({"inputs": inputs.reshape(shape), "labels": labels.reshape(shape)})
    ds = _finish(ds, replicas_per_host, num_steps, reading.repeat, reading.start_step)
    ds.num_steps = num_steps
    return ds
