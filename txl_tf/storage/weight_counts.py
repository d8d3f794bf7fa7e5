"""The model weights a saved file holds, against those a model of the configuration reads.

TensorFlow's checkpoint restore and Keras's `load_weights` both read what the model asks for and
ignore the rest: the weights of a 2-layer model load into a 1-layer configuration without a word.
`check_no_extra_weights` refuses a file that holds more model weights than the model has, naming
the first weights the configuration has no place for.
"""
import os
import re
from typing import List

import keras
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2


# A layer of the model in a saved name: checkpoints "transformer_xl/layer_3/...", Keras weights
# files "blocks/transformer_xl_block_3/..." (the first block without a number).
_LAYER = re.compile(r"^[^/]+/layer_(\d+)/|^blocks/transformer_xl_block(?:_(\d+))?/")


class ExtraWeightsError(ValueError):
    """A weights file that holds weights the model of its configuration does not have."""


def checkpoint_model_weights(checkpoint_path: str, attribute: str = "model") -> List[str]:
    """The variable names (as saved) under the root object's `attribute` of a TF checkpoint.

    Args:
      checkpoint_path: a checkpoint prefix (e.g. runs/x/ckpt-4).
      attribute: the root's child holding the model (txl-tf checkpoints: "model").

    Returns:
      The saved names of the variables reachable from that child, each once ([] when the
      checkpoint has no object graph or no such child).
    """
    reader = tf.train.load_checkpoint(checkpoint_path)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        return []
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    stack = [c.node_id for c in graph.nodes[0].children if c.local_name == attribute]
    seen, names = set(), []
    while stack:
        node_id = stack.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        node = graph.nodes[node_id]
        names += [a.full_name or a.checkpoint_key for a in node.attributes
                  if a.name == "VARIABLE_VALUE"]
        stack += [c.node_id for c in node.children]
    return names


def keras_file_weights(path: str) -> List[str]:
    """The dataset names of a Keras `.weights.h5` file (one per saved weight)."""
    import h5py  # Keras's own dependency for .weights.h5; only this reader needs it

    names = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: names.append(name)
                     if isinstance(item, h5py.Dataset) else None)
    return names


def model_weight_count(model) -> int:
    """The weights a checkpoint or weights file of `model` holds (its trackable variables)."""
    return sum(isinstance(item, (tf.Variable, keras.Variable))
               for item in tf.train.TrackableView(model).descendants())


def check_no_extra_weights(saved: List[str], model, weights_file: str,
                           config_file: str) -> None:
    """Raises `ExtraWeightsError` when `saved` names more weights than `model` holds.

    Args:
      saved: the weight names of the file (`checkpoint_model_weights`, `keras_file_weights`).
      model: the `TransformerXL` built from `config_file`, its weights just read.
      weights_file: the file read, for the message.
      config_file: the configuration the model was built from, for the message.
    """
    have = model_weight_count(model)
    if len(saved) <= have:
        return
    config = model.config
    layers = {m.group(1) or m.group(2) or "0" for m in map(_LAYER.search, saved) if m}
    what = (f"the weights of {len(layers)} layers" if len(layers) > config.n_layer
            else f"{len(saved)} model weights")
    raise ExtraWeightsError(
        f"{weights_file} holds {what} but a model of {config_file} (n_layer {config.n_layer}, "
        f"d_model {config.d_model}, n_token {config.n_token}) has {have} weights: the weights "
        f"were written for another configuration; use the {os.path.basename(config_file)} "
        "they were saved with.")


# A weights file's bytes beyond its weights' own (HDF5's headers and names).
WEIGHTS_FILE_OVERHEAD = 64 * 2**20


def check_weights_file(path: str, model, directory: str, config_file: str) -> None:
    """Refuses a Keras `.weights.h5` file from elsewhere before its weights are read: a link
    outside `directory`, not a regular file, larger than `model`'s weights can be, or holding a
    dataset (compressed or not) whose shape would inflate beyond what `config_file` implies
    (more values than the model's largest weight). More weights than the model has are
    `check_no_extra_weights`'s, after the read.

    Only HDF5's metadata (dataset shapes and types) is read here, never a dataset's data.

    Args:
      path: the weights file.
      model: the model built from `config_file` (its weights define the bound).
      directory: the directory the file must lie in.
      config_file: the configuration, for the message.

    Raises:
      ExtraWeightsError: the file is refused (one line naming it and the fix).
    """
    import h5py  # Keras's own dependency for .weights.h5; only the readers of h5 need it
    from untrusted_files import reading  # pylint: disable=import-outside-toplevel

    weights = [tuple(int(d) for d in w.shape) for w in model.weights]
    largest = max((int(np_prod(s)) for s in weights), default=0)
    total = sum(int(np_prod(s)) for s in weights)
    bound = total * 8 + WEIGHTS_FILE_OVERHEAD  # float64 at most per weight
    fd = reading.open_checked(path, inside=directory, max_bytes=bound, error=ExtraWeightsError)
    fix = (f"the weights were written for another configuration; use the "
           f"{os.path.basename(config_file)} they were saved with")
    with os.fdopen(fd, "rb") as handle, h5py.File(handle, "r") as f:
        found = []
        f.visititems(lambda name, item: found.append((name, item.shape, item.dtype.itemsize))
                     if isinstance(item, h5py.Dataset) else None)
    for name, shape, itemsize in found:
        count = int(np_prod(shape or ()))
        if count > largest or itemsize > 8:
            raise ExtraWeightsError(
                f"{path}: dataset {name} has shape {tuple(shape)} ({count} values of "
                f"{itemsize} bytes), larger than any weight of a model of {config_file} "
                f"(the largest has {largest} values); {fix}.")


def np_prod(shape) -> int:
    """The number of values of `shape` (1 for a scalar), as a Python int (no overflow)."""
    count = 1
    for d in shape:
        count *= int(d)
    return count
