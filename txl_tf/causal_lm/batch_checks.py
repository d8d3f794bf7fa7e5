"""The checks of the batches `fit` and `evaluate` take: integer ids in range, counted labels.

Keras would cast float ids to integers, wrap int64 ids modulo 2^32 into int32, fail deep inside
the embedding lookup for an id beyond the vocabulary (an op dump), and report a loss of 0.0 for
a batch whose labels are all negative (padding: nothing counted). Instead:
  * `check_batch_dtypes` refuses non-integer inputs or labels before the first step;
  * `checked_batch` asserts, inside the step and before the cast to int32, that inputs are in
    [0, V), labels below V (negative labels are padding) and that some label is counted;
  * `one_line_error` turns such a failed assertion (TensorFlow's multi-line error) into a
    `CausalLMInputError` of one line.
Shapes: B batch, Q segment length, V n_token.
"""
import tensorflow as tf

from txl_tf.causal_lm.errors import CausalLMInputError

_MARK = "txl-tf batch check: "


def check_batch_dtypes(element_spec) -> None:
    """Raises `CausalLMInputError` unless the inputs and labels of `element_spec` (a dict with
    "inputs" and "labels", or an (inputs, labels) pair) are integer tensors."""
    specs = ({k: element_spec[k] for k in ("inputs", "labels")} if isinstance(element_spec, dict)
             else dict(zip(("inputs", "labels"), element_spec)))
    for name, spec in specs.items():
        dtype = getattr(spec, "dtype", None)
        if dtype is None or not dtype.is_integer:
            raise CausalLMInputError(
                f"the dataset's {name} are {getattr(dtype, 'name', type(spec).__name__)}; token "
                "ids and labels must be integers (int32 or int64): cast them with "
                "tf.cast(..., tf.int32) if they are whole numbers.")


def checked_batch(data, n_token: int) -> dict:
    """{"inputs", "labels"} int32 [B, Q] of an element {"inputs", "labels"} or (x, y), checked.

    Args:
      data: the element; integer tensors [B, Q].
      n_token: V, the model's vocabulary size.

    Returns:
      The int32 batch, after assertions that fail with a message starting with the marker
      `one_line_error` recognizes.
    """
    inputs, labels = ((data["inputs"], data["labels"]) if isinstance(data, dict)
                      else (data[0], data[1]))
    wide_inputs, wide_labels = tf.cast(inputs, tf.int64), tf.cast(labels, tf.int64)
    v = tf.constant(n_token, tf.int64)
    checks = [
        tf.debugging.Assert(
            tf.reduce_all((wide_inputs >= 0) & (wide_inputs < v)),
            [f"{_MARK}input ids must be in [0, {n_token}) (the model's n_token); got min",
             tf.reduce_min(wide_inputs), "max", tf.reduce_max(wide_inputs)]),
        tf.debugging.Assert(
            tf.reduce_all(wide_labels < v),
            [f"{_MARK}labels must be below {n_token} (the model's n_token; negative labels are "
             "padding); got max", tf.reduce_max(wide_labels)]),
        tf.debugging.Assert(
            tf.reduce_any(wide_labels >= 0),
            [f"{_MARK}a batch has no counted label (every label is negative, i.e. padding), so "
             "its loss would be 0; labels are the next token ids in [0, "
             f"{n_token})"]),
    ]
    with tf.control_dependencies(checks):
        return {"inputs": tf.cast(inputs, tf.int32), "labels": tf.cast(labels, tf.int32)}


def one_line_error(error: BaseException):
    """A `CausalLMInputError` of one line for a failed `checked_batch` assertion, else None."""
    message = getattr(error, "message", None) or str(error)
    if _MARK not in message:
        return None
    text = message[message.index(_MARK) + len(_MARK):].split("\n")[0]
    # TensorFlow prints the Assert's data as "msg] [45] [max] [56]", quotes escaped.
    text = text.replace("] [", " ").replace("\\'", "'").replace("]]", "").replace("]", "")
    return CausalLMInputError(" ".join(text.split()).rstrip(". ") + ".")
