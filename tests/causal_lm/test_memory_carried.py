"""`fit` really carries the memory: on the synthetic long-range corpus (every token after a
group's first chunk repeats the token `period` positions back, with period > tgt_len), a model
that cannot see `period` tokens back can do no better than ln(num_symbols) nats per token (the
corpus' definition, `tf_records/corpora/synthetic.py`). The same tiny model, from the same
weights on the same batches, goes far below that floor with fit's memory, and stays on it when
a callback resets the memory before every batch.
"""
import math

import keras
import pytest

import tf_records
import txl_tf

SYMBOLS, PERIOD, REPEATS = 16, 20, 3
# One layer: its attention over the memory reaches PERIOD tokens back (mem_len >= PERIOD >
# tgt_len); 200 steps take the carried run's loss about 1.3 nats below the floor.
CONFIG = dict(n_token=SYMBOLS, n_layer=1, d_model=32, n_head=2, d_head=16, d_inner=64,
              tgt_len=16, mem_len=24, dropout=0.0, dropatt=0.0)
BATCH, EPOCHS, STEPS_PER_EPOCH = 8, 10, 20
TOKENS = tf_records.corpora.synthetic.synthetic_stream(
    BATCH * (EPOCHS * STEPS_PER_EPOCH * CONFIG["tgt_len"] + 1), SYMBOLS, PERIOD, REPEATS, seed=0)
FLOOR = math.log(SYMBOLS)  # the best loss without the token PERIOD back


class ResetEveryBatch(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.model.reset_memory()


def last_epoch_loss(callbacks):
    keras.utils.set_random_seed(0)
    lm = txl_tf.TransformerXLCausalLM(txl_tf.TransformerXL(txl_tf.TransformerXLConfig(**CONFIG)))
    lm.compile(optimizer=keras.optimizers.Adam(5e-3), clip=0.25)
    data = tf_records.dataset_from_tokens(TOKENS, BATCH, CONFIG["tgt_len"])
    history = lm.fit(data, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, verbose=0,
                     callbacks=callbacks)
    return history.history["loss"][-1]


def test_fit_with_memory_beats_the_memory_reset_every_batch():
    reset = last_epoch_loss([ResetEveryBatch()])
    carried = last_epoch_loss([])
    assert reset == pytest.approx(FLOOR, abs=0.1)
    assert carried < FLOOR - 0.8, (carried, reset)
