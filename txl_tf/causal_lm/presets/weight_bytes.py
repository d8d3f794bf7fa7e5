"""The bytes of a backbone's `model.weights.h5`, made in memory through Keras' HDF5 store (a
private Keras API, `keras.src.saving.saving_lib`: the one place txl-tf reaches it).

Example:
  >>> data = weights_file_bytes(built(causal_lm.backbone))
"""
import io

import tensorflow as tf
from keras.src.saving import saving_lib  # the HDF5 store of save_weights

from txl_tf.model.transformer_xl import TransformerXL


def built(backbone: TransformerXL) -> TransformerXL:
    """`backbone`, its weights created (a call of one token, ids [1, 1]) when they were not."""
    if not backbone.built:
        backbone(tf.zeros([1, 1], tf.int32), mems=None, training=False)
    return backbone


def weights_file_bytes(backbone: TransformerXL) -> bytes:
    """The bytes of `backbone.save_weights("model.weights.h5")`, made in memory.

    HDF5 crashes the process (a segmentation fault in `h5py.File.close`) when the disk fills
    while it writes, and `save_weights` takes only a path; so the file is built in memory with
    Keras' own HDF5 store and written by Python, whose failure is an `OSError`.
    """
    buffer = io.BytesIO()
    store = saving_lib.H5IOStore(buffer, mode="w")
    try:
        saving_lib._save_state(backbone, weights_store=store, assets_store=None,  # noqa: SLF001
                               inner_path="", visited_saveables=set())
    finally:
        store.close()
    return buffer.getvalue()
