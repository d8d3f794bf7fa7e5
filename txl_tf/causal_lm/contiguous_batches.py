"""The check that a dataset keeps every stream's segments in order, at a fixed batch size.

Training with memory reads batch row b of step t+1 as the continuation of row b of step t (the
batches `tf_records` writes, or `tf_records.dataset_from_tokens`). A shuffled dataset, one whose
order is not deterministic, or one whose batch size may change (an unknown batch dimension,
e.g. a final short batch) would pair a memory with the wrong text; `check_contiguous` refuses
them before training starts.
"""
import tensorflow as tf


class ContiguousBatchError(ValueError):
    """A dataset that would break the segment-level recurrence (one line: problem; fix)."""


def _pipeline(dataset: tf.data.Dataset):
    """`dataset` and every dataset it reads from, transitively."""
    pending, seen = [dataset], []
    while pending:
        current = pending.pop()
        seen.append(current)
        pending.extend(current._inputs())  # tf.data's own graph of the pipeline
    return seen


_SAMPLE_WEIGHTS = ("fit() and evaluate() take no sample weights: the loss is the mean NLL of "
                   "the counted labels; to leave a position out, set its label to -1 (padding), "
                   "and drop the weights from the dataset.")


def _dense(spec, name):
    """Refuses a ragged or sparse `spec` of the dataset's `name` (one line: how to pad)."""
    kind = type(spec).__name__
    if "Ragged" in kind or "Sparse" in kind:
        raise ContiguousBatchError(
            f"the dataset's {name} are {'ragged' if 'Ragged' in kind else 'sparse'} tensors; "
            "give dense int [B, Q] segments: cut the token streams with "
            "tf_records.dataset_from_tokens, or pad with .to_tensor() and set the padded "
            "labels to -1.")
    return spec


def _inputs_spec(element_spec):
    """The spec of the token ids of an element: {"inputs", "labels"} or (inputs, labels)."""
    if isinstance(element_spec, dict):
        if any("weight" in str(key) for key in element_spec):
            raise ContiguousBatchError(_SAMPLE_WEIGHTS)
        if set(element_spec) != {"inputs", "labels"}:
            raise ContiguousBatchError(
                f"the dataset's elements are dicts with keys {sorted(element_spec)}; yield "
                "{'inputs': ids [B, Q], 'labels': ids [B, Q]} or (inputs, labels), nothing "
                "else (other keys would be ignored).")
        _dense(element_spec["labels"], "labels")
        return _dense(element_spec["inputs"], "inputs")
    if isinstance(element_spec, tuple) and len(element_spec) == 3:
        raise ContiguousBatchError(_SAMPLE_WEIGHTS)  # Keras' (x, y, sample_weight)
    if isinstance(element_spec, tuple) and len(element_spec) == 2:
        _dense(element_spec[1], "labels")
        return _dense(element_spec[0], "inputs")
    raise ContiguousBatchError(
        f"the dataset yields {element_spec}; yield {{'inputs': ids [B, Q], 'labels': ids [B, Q]}} "
        "or (inputs, labels) pairs.")


def check_contiguous(dataset, replicas: int = 1) -> int:
    """The per-replica batch of `dataset`, if it keeps its streams in order.

    Args:
      dataset: a `tf.data.Dataset` of {"inputs", "labels"} (or (inputs, labels)) int [B, Q]
        global batches; replica r trains on rows [r * B / R, (r + 1) * B / R).
      replicas: R, the replicas in sync.

    Returns:
      B / R, the streams of each replica.

    Raises:
      ContiguousBatchError: not a dataset, shuffled, not deterministic, or a batch size that is
        unknown or not divisible by the replicas.
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise ContiguousBatchError(
            f"fit() and evaluate() take a tf.data.Dataset of contiguous batches, got "
            f"{type(dataset).__name__}; use tf_records.dataset_from_tokens or the prepared records.")
    if any("Shuffle" in type(part).__name__ for part in _pipeline(dataset)):
        raise ContiguousBatchError(
            "the dataset is shuffled, which breaks the memory's recurrence; remove .shuffle(): "
            "the streams are already in a fixed order.")
    if dataset.options().deterministic is False:
        raise ContiguousBatchError(
            "the dataset's order is not deterministic (options.deterministic=False); set it "
            "to True so that every stream's segments stay in order.")
    batch = _inputs_spec(dataset.element_spec).shape
    if batch.rank != 2 or batch[0] is None:
        raise ContiguousBatchError(
            f"the dataset's batch size may change (inputs of shape {batch}); batch with "
            "drop_remainder=True so that every batch holds the same streams.")
    if batch[0] % replicas:
        raise ContiguousBatchError(
            f"a batch of {batch[0]} streams cannot be split over {replicas} replicas; use a "
            f"multiple of {replicas}.")
    return batch[0] // replicas
