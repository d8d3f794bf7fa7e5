"""`TransformerXLCausalLM` as a Keras model: its call is the backbone's (zero memory by default,
or the memory the caller threads), `get_config`/`from_config` and a `.keras` file rebuild it
(weights and training memory included), and `import txl_tf` exports it lazily."""
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

import tf_records
import txl_tf

from tiny import tiny_config, tiny_model

CONFIG = dict(n_token=16, mem_len=4)
TOKENS = np.arange(4 * (3 * 6 + 1)) % 16


def test_call_is_the_backbone_with_the_memory_threaded():
    backbone = tiny_model(**CONFIG)
    lm = txl_tf.TransformerXLCausalLM(backbone)
    ids = tf.constant(np.arange(24).reshape(2, 12) % 16, tf.int32)
    first, second = ids[:, :6], ids[:, 6:]
    expected = backbone(first, mems=backbone.init_mems(2))
    np.testing.assert_allclose(lm(first), expected["log_probs"], rtol=1e-6)
    log_probs, mems = lm(first, return_memory=True)
    expected_next = backbone(second, mems=expected["mems"])["log_probs"]
    np.testing.assert_allclose(lm(second, mems=mems), expected_next, rtol=1e-6)
    # the memory matters: the second segment without it is scored differently
    assert not np.allclose(lm(second), expected_next, rtol=1e-4)


def test_config_and_keras_file_round_trip(tmp_path):
    """One layer: the file holds the memory as one tensor [L, B, M, D] and the weights by name
    (each layer adds to fit's trace, the save and the load)."""
    lm = txl_tf.TransformerXLCausalLM(tiny_model(**CONFIG, n_layer=1))
    lm.compile(optimizer=keras.optimizers.Adam(1e-2), clip=0.5, steps_per_execution=2)
    lm.fit(tf_records.dataset_from_tokens(TOKENS, 4, 6), verbose=0)
    ids = tf.constant(TOKENS[:12].reshape(2, 6), tf.int32)

    rebuilt = txl_tf.TransformerXLCausalLM.from_config(lm.get_config())
    assert rebuilt.backbone.config == lm.backbone.config
    rebuilt.backbone.set_weights(lm.backbone.get_weights())
    np.testing.assert_allclose(rebuilt(ids), lm(ids), rtol=1e-6)

    path = str(tmp_path / "lm.keras")
    lm.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, txl_tf.TransformerXLCausalLM)
    np.testing.assert_allclose(loaded(ids), lm(ids), rtol=1e-6)
    np.testing.assert_array_equal(loaded.memory_to_host(), lm.memory_to_host())
    # compiled as before, with the optimizer's state: training goes on where it stopped
    assert loaded.get_compile_config() == lm.get_compile_config()
    assert loaded._replica_step.clip == 0.5 and loaded.steps_per_execution == 2
    assert loaded.optimizer.iterations.numpy() == lm.optimizer.iterations.numpy() == 3
    for a, b in zip(loaded.optimizer.variables, lm.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_import_txl_tf_stays_tensorflow_free():
    code = ("import sys, txl_tf; assert 'tensorflow' not in sys.modules; "
            "assert 'TransformerXLCausalLM' in dir(txl_tf); "
            "import txl_tf.causal_lm; assert 'tensorflow' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert txl_tf.TransformerXLCausalLM.__module__ == "txl_tf.causal_lm.causal_lm"
