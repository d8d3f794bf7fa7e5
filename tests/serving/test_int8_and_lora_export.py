"""The SavedModel of an int8 model and of a LoRA-adapted one (`export_built_model`, what
runners/export.py and `TransformerXLCausalLM.export_for_serving` write): the same signatures as
the float export, int8 weights inside (adapters merged, none saved), and TF's session-based loader (TF
Serving's) scores with them as the Keras model does."""
import os

import numpy as np
import pytest
import tensorflow as tf

from saved_model_calls import SavedModelCalls
from tiny import TINY_MODEL, tiny_model
from txl_tf.serving import signatures
from txl_tf.serving.export_options import ExportOptions
from txl_tf.serving.saved_model_writer import export_built_model

# The int8 export quantizes a merged copy of the model, and Keras collects garbage for every
# weight quantize replaces: each collection scans only the test's own objects (conftest.py).
pytestmark = pytest.mark.usefixtures("gc_frozen")
MEM_LEN = 6
# One layer: the int8 weights and the merged adapters of every layer are what is checked, not
# how layers stack; each layer adds to the tracing of every signature of both exports.
N_LAYER = 1
TOKENS = (np.arange(8, dtype=np.int32).reshape(2, 4) * 5) % TINY_MODEL["n_token"]


def export(model, path):
    export_built_model(model, ExportOptions(model_dir="", export_dir=path, mem_len=MEM_LEN,
                                            warmup_requests=0))
    return os.path.join(path, "1")


def saved_dtypes(path):
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    return {k: v for k, v in reader.get_variable_to_dtype_map().items()
            if not k.startswith("_CHECKPOINTABLE")}


def test_int8_and_adapted_exports_serve_through_the_session_loader(tmp_path):
    """(The float model's export: tests/serving/test_serving_loaders.py and test_export.py.)"""
    plain, int8, adapted = (tiny_model(n_layer=N_LAYER) for _ in range(3))
    int8.quantize("int8")
    adapted.enable_lora(2)
    for variable in adapted.trainable_weights:  # b away from zero: the merge matters
        variable.assign(tf.random.stateless_normal(variable.shape, (1, 2), stddev=0.1))
    paths = {tag: export(model, str(tmp_path / tag))
             for tag, model in (("int8", int8), ("lora", adapted))}
    calls = {tag: SavedModelCalls(path, "session") for tag, path in paths.items()}
    float_signatures = sorted(name for record in signatures.SIGNATURES if not record.text
                              for name in (record.name,) + record.aliases)
    assert calls["int8"].names() == calls["lora"].names() == float_signatures
    int8_saved = saved_dtypes(paths["int8"])
    int8_count = sum(dtype == tf.int8 for dtype in int8_saved.values())
    assert int8_count == sum(v.dtype == "int8" for v in int8.weights) > 0
    assert not any("lora" in k for k in saved_dtypes(paths["lora"]))
    mems = np.zeros([2, N_LAYER, MEM_LEN, TINY_MODEL["d_model"]], np.float32)
    served = {tag: call("score", {"tokens": TOKENS, "mems": mems})["log_probs"]
              for tag, call in calls.items()}
    keras_out = {tag: model(tf.constant(TOKENS), mems=model.init_mems(2, MEM_LEN),
                            training=False)["log_probs"].numpy()
                 for tag, model in (("float", plain), ("int8", int8), ("lora", adapted))}
    for tag in served:
        np.testing.assert_allclose(served[tag], keras_out[tag], atol=1e-4, err_msg=tag)
    assert np.abs(served["lora"] - keras_out["float"]).max() > 1e-3  # the adapters merged in
