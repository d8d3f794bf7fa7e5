"""A preset's metadata.json: versions of txl_tf / TensorFlow / Keras / Python, the parameter
count, the training data, where the weights came from and their quantization.

Example:
  >>> sorted(metadata(causal_lm))[:3]
  ['format', 'keras_version', 'parameter_count']
"""
import platform

import keras
import tensorflow as tf

from txl_tf.causal_lm.presets.weight_bytes import built
from txl_tf.model.quantization import quantization_mode
from txl_tf.runtime.version import __version__ as txl_tf_version

# metadata.json's field naming the quantization of the weights file ("int8"; absent: float)
QUANTIZATION_FIELD = "quantization"
# corpus-info.json fields that describe the training data in metadata.json
DATA_FIELDS = ("dataset", "level", "vocab_size", "num_tokens", "options", "data_dir")


def metadata(causal_lm, training_data=None, source=None) -> dict:
    """metadata.json: versions, parameter count, the training data and the weights' source.

    Args:
      causal_lm: an object with `.backbone` and `.preprocessor` (None or one with
        `corpus_info`).
      training_data: dict for `training_data` (default: the preprocessor's `DATA_FIELDS`).
      source: dict for `source` (default: empty).
    """
    pre = causal_lm.preprocessor
    info = pre.corpus_info if pre is not None else {}
    data = training_data if training_data is not None else {
        k: info[k] for k in DATA_FIELDS if k in info}
    meta = {"format": "txl-tf preset", "txl_tf_version": txl_tf_version,
            "tensorflow_version": tf.__version__, "keras_version": keras.__version__,
            "python_version": platform.python_version(),
            "parameter_count": int(built(causal_lm.backbone).count_params()),
            "training_data": data, "source": source or {}}
    mode = quantization_mode(causal_lm.backbone)
    if mode is not None:
        meta[QUANTIZATION_FIELD] = mode  # the loader quantizes the model before reading weights
    return meta
