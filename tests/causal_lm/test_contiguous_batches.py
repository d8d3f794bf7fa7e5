"""Datasets that would break the recurrence are refused by `fit` and `evaluate` with one
`ContiguousBatchError` (a ValueError) line naming the problem and the fix, before anything is
trained: shuffled, of non-deterministic order, a batch size that may change (a final short
batch), not a dataset, labels passed apart, a batch the replicas cannot share, or a batch size
other than the one the memory holds."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_records
import txl_tf
from txl_tf.causal_lm import ContiguousBatchError

from tiny import tiny_config

CONFIG = tiny_config(n_token=16, mem_len=4, n_layer=1)  # the checks precede the layers
TOKENS = np.arange(4 * (3 * CONFIG.tgt_len + 1)) % 16


def data(batch=4):
    return tf_records.dataset_from_tokens(TOKENS, batch, CONFIG.tgt_len)


def new_lm():
    lm = txl_tf.TransformerXLCausalLM(txl_tf.TransformerXL(CONFIG))
    lm.compile(optimizer=keras.optimizers.Adam(1e-3))
    return lm


def unbatched():
    return data().unbatch()


def not_deterministic():
    options = tf.data.Options()
    options.deterministic = False
    return data().with_options(options)


REFUSED = {
    "shuffled": (lambda: data().shuffle(8), "shuffled"),
    "shuffled_then_mapped": (lambda: data().shuffle(8).map(lambda e: e), "shuffled"),
    "final_short_batch": (lambda: unbatched().batch(3), "batch size may change"),
    "not_deterministic": (not_deterministic, "not deterministic"),
    "numpy": (lambda: np.zeros([4, CONFIG.tgt_len], np.int32), "take a tf.data.Dataset"),
    "no_labels": (lambda: data().map(lambda e: {"inputs": e["inputs"]}), "keys"),
}


def assert_one_line(error):
    message = str(error.value)
    assert isinstance(error.value, ValueError)
    assert "\n" not in message and "; " in message, message


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_fit_and_evaluate_refuse(case):
    make, words = REFUSED[case]
    lm = new_lm()
    for method in (lm.fit, lm.evaluate):
        with pytest.raises(ContiguousBatchError, match=words) as error:
            method(make(), verbose=0)
        assert_one_line(error)
    assert lm.optimizer.iterations.numpy() == 0 and lm.memory_to_host() is None


def test_labels_apart_are_refused():
    lm = new_lm()
    with pytest.raises(ContiguousBatchError, match="labels inside the dataset") as error:
        lm.fit(data().map(lambda e: e["inputs"]), np.zeros([4, CONFIG.tgt_len]), verbose=0)
    assert_one_line(error)


def test_a_new_batch_size_is_refused_until_the_memory_is_forgotten():
    lm = new_lm()
    lm.fit(data(4), verbose=0)
    memory = lm.memory_to_host()
    with pytest.raises(ContiguousBatchError, match="memory holds 4 streams") as error:
        lm.fit(data(2), verbose=0)
    assert_one_line(error)
    np.testing.assert_array_equal(lm.memory_to_host(), memory)
    lm.reset_memory(keep_streams=False)
    lm.fit(data(2), verbose=0)
    assert lm.memory_to_host().shape == (CONFIG.n_layer, 2, CONFIG.mem_len, CONFIG.d_model)


def test_a_batch_the_replicas_cannot_share_is_refused(two_cpu_devices):
    with tf.distribute.MirroredStrategy(two_cpu_devices).scope():
        lm = new_lm()
    with pytest.raises(ContiguousBatchError, match="cannot be split over 2 replicas") as error:
        lm.fit(data(3), verbose=0)
    assert_one_line(error)


def test_fit_needs_compile():
    lm = txl_tf.TransformerXLCausalLM(txl_tf.TransformerXL(CONFIG))
    with pytest.raises(ValueError, match="compile"):
        lm.fit(data(), verbose=0)
