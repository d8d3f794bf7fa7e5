"""`generate(tf.data.Dataset)`: prompts from a dataset, generated element by element and
concatenated, as keras-hub's `CausalLM.generate` does.

An element is what `generate` takes in one call: a string (one prompt), strings [b], token ids
int [P] (one prompt) or [b, P] (a batch); a batched or an unbatched dataset. The outputs are a
list of str (text) or int32 [N, W] (ids; every element's rows of equal width W).

Example:
  >>> elements = checked_elements(tf.data.Dataset.from_tensor_slices(["a b", "c"]))
  >>> joined([generate(lm, e) for e in elements], text=True)    # ['a b ...', 'c ...']
"""
import numpy as np
import tensorflow as tf

from txl_tf.generation.errors import CausalLMInputError


def is_dataset(inputs) -> bool:
    return isinstance(inputs, tf.data.Dataset)


def checked_elements(dataset):
    """(iterator of the elements, whether they are text) of a dataset of prompts.

    Raises:
      CausalLMInputError: elements that are not one tensor of strings (rank 0 or 1) or of
        integers (rank 1 or 2).
    """
    spec = dataset.element_spec
    text = isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string
    ids = isinstance(spec, tf.TensorSpec) and spec.dtype.is_integer
    if not ((text and spec.shape.rank in (0, 1)) or (ids and spec.shape.rank in (1, 2))):
        raise CausalLMInputError(
            "a dataset of prompts holds strings (one [] or a batch [b]) or token ids (int [P] "
            f"or [b, P]), got elements {spec}; map it to one such tensor.")
    return iter(dataset), text


def joined(outputs, text: bool):
    """The outputs of every element as one: a list of str, or int32 [N, W].

    Raises:
      CausalLMInputError: no element, or id rows of different widths.
    """
    if not outputs:
        raise CausalLMInputError("the dataset holds no prompts; give at least one.")
    if text:
        return [s for out in outputs for s in ([out] if isinstance(out, str) else out)]
    rows = [np.reshape(out, [-1, np.shape(out)[-1]]) for out in outputs]
    widths = sorted({r.shape[1] for r in rows})
    if len(widths) > 1:
        raise CausalLMInputError(
            f"the dataset's prompts give outputs of widths {widths}; give max_length (and "
            "leave strip_prompt off) so that every row has max_length tokens.")
    return np.concatenate(rows, axis=0)
