"""model.weights.h5 made in memory (presets/weight_bytes.py) holds the weights
`save_weights` writes."""

import numpy as np

import txl_tf
from causal_lm_support import log_probs, model_dir
from txl_tf.causal_lm.presets.weight_bytes import built, weights_file_bytes


def test_weights_made_in_memory_are_those_save_weights_writes(tmp_path):
    _, model = model_dir(tmp_path / "m", "byte")
    (tmp_path / "mem.weights.h5").write_bytes(weights_file_bytes(model))
    model.save_weights(str(tmp_path / "keras.weights.h5"))
    for name in ("mem.weights.h5", "keras.weights.h5"):
        fresh = built(txl_tf.TransformerXL(model.config))
        fresh.load_weights(str(tmp_path / name))
        np.testing.assert_array_equal(log_probs(fresh), log_probs(model))
