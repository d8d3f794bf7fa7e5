"""Standard Keras callbacks with `TransformerXLCausalLM.fit`: BackupAndRestore resumes an
interrupted run with the memory (same losses, weights and memory as the uninterrupted run),
ModelCheckpoint's weights file holds the memory, EarlyStopping stops on the validation loss
(`evaluate` = the Trainer's evaluation), TensorBoard writes the losses TensorBoard reads, and
ResetMemoryAtEpochStart is the only thing that zeroes the memory between epochs.

Every run trains on the same finite dataset of contiguous batches: an epoch is one pass, and
the memory carries over from the end of one pass to the start of the next (as the Trainer's
repeated data).
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

import tf_records
import txl_tf
from txl_tf.causal_lm import ResetMemoryAtEpochStart
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer

from tiny import tiny_config

# One layer: the callbacks save, restore, reset and move the memory as one tensor [L, B, M, D];
# how layers stack is not what they touch (fit with two layers' memory:
# test_fit_equals_trainer.py::test_fit_equals_trainer_on_one_device). init_std 0.1: attention
# weights far enough from uniform that one layer's memory moves the next batch's loss by more
# than test_memory_is_reset_only_by_reset_memory_at_epoch_start asks.
CONFIG = tiny_config(n_token=16, mem_len=5, init_std=0.1, n_layer=1)
BATCH, STEPS, EPOCHS = 4, 5, 3
TOKENS = tf_records.corpora.synthetic.synthetic_stream(
    BATCH * (STEPS * CONFIG.tgt_len + 1), num_symbols=16, period=9, repeats=2, seed=5)
VALID = tf_records.corpora.synthetic.synthetic_stream(
    2 * (3 * CONFIG.tgt_len + 1), num_symbols=16, period=9, repeats=2, seed=6)


def data():
    return tf_records.dataset_from_tokens(TOKENS, BATCH, CONFIG.tgt_len)


def new_lm(seed=1):
    keras.utils.set_random_seed(seed)
    lm = txl_tf.TransformerXLCausalLM(txl_tf.TransformerXL(CONFIG))
    lm.compile(optimizer=keras.optimizers.Adam(1e-2), clip=0.25)
    return lm


class Record(keras.callbacks.Callback):
    """The logs of every batch and the memory at every epoch's start and end."""

    def __init__(self):
        super().__init__()
        self.batches, self.starts, self.ends = [], {}, {}

    def on_epoch_begin(self, epoch, logs=None):
        self.starts[epoch] = self.model.memory_to_host()

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append(float(logs["loss"]))

    def on_epoch_end(self, epoch, logs=None):
        self.ends[epoch] = self.model.memory_to_host()


class Interrupt(keras.callbacks.Callback):
    """Stops the process's training in the middle of an epoch, as a crash would."""

    def on_train_batch_begin(self, batch, logs=None):
        if self.model.optimizer.iterations.numpy() == STEPS + 2:  # epoch 1, batch 2
            raise RuntimeError("interrupted")


def weights(lm):
    return [v.numpy() for v in lm.backbone.trainable_variables]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run the tests compare with: `new_lm()` trained EPOCHS epochs with
    BackupAndRestore, its `Record`, history, final weights and memory, the weights files
    ModelCheckpoint wrote at every epoch's end (`checkpoint(epoch)`, epochs from 1) and the
    folder TensorBoard's callback wrote its logs into ("logs")."""
    lm, record = new_lm(), Record()
    saved = str(tmp_path_factory.mktemp("checkpoints") / "epoch{epoch}.weights.h5")
    logs = str(tmp_path_factory.mktemp("tensorboard") / "logs")
    history = lm.fit(data(), epochs=EPOCHS, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(str(tmp_path_factory.mktemp("whole"))), record,
        keras.callbacks.ModelCheckpoint(saved, save_weights_only=True),
        keras.callbacks.TensorBoard(logs)])
    return dict(record=record, history=history.history, weights=weights(lm),
                memory=lm.memory_to_host(), logs=logs,
                checkpoint=lambda epoch: saved.format(epoch=epoch))


def test_backup_and_restore_resumes_with_the_memory(tmp_path, whole):
    record = whole["record"]
    interrupted = new_lm()
    with pytest.raises(RuntimeError, match="interrupted"):
        interrupted.fit(data(), epochs=EPOCHS, verbose=0, callbacks=[
            keras.callbacks.BackupAndRestore(str(tmp_path / "b")), Interrupt()])
    # A new process: another model object with other initial weights, the same backup.
    resumed, resumed_record = new_lm(seed=2), Record()
    resumed.fit(data(), epochs=EPOCHS, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(str(tmp_path / "b")), resumed_record])

    # It restarted at epoch 1 with the memory, weights and Adam state of epoch 0's end.
    assert sorted(resumed_record.starts) == [1, 2]
    assert np.abs(record.ends[0]).max() > 0.1  # a real memory, not zeros
    np.testing.assert_array_equal(resumed_record.starts[1], record.ends[0])
    np.testing.assert_allclose(resumed_record.batches, record.batches[STEPS:], rtol=1e-6)
    for a, b in zip(weights(resumed), whole["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(resumed.memory_to_host(), whole["memory"], rtol=1e-6,
                               atol=1e-7)
    assert resumed.optimizer.iterations.numpy() == EPOCHS * STEPS


@pytest.mark.parametrize("save_freq, steps_per_epoch", [(2, None), ("epoch", 2)])
def test_backup_that_cannot_resume_exactly_is_refused(tmp_path, save_freq, steps_per_epoch):
    lm = new_lm()
    backup = keras.callbacks.BackupAndRestore(str(tmp_path), save_freq=save_freq)
    with pytest.raises(ValueError, match="BackupAndRestore") as error:
        lm.fit(data(), epochs=2, steps_per_epoch=steps_per_epoch, verbose=0, callbacks=[backup])
    assert "\n" not in str(error.value)
    assert lm.optimizer.iterations.numpy() == 0


def test_model_checkpoint_holds_weights_and_memory(whole):
    """The file ModelCheckpoint wrote at the last epoch's end (in the run of `whole`) holds
    that run's final weights and memory."""
    fresh = new_lm(seed=3)
    fresh.load_weights(whole["checkpoint"](EPOCHS))
    for a, b in zip(weights(fresh), whole["weights"]):
        np.testing.assert_array_equal(a, b)
    assert np.abs(whole["memory"]).max() > 0.1  # a real memory, not zeros
    np.testing.assert_array_equal(fresh.memory_to_host(), whole["memory"])


def test_evaluate_equals_the_trainer_and_early_stopping_reads_it():
    lm = new_lm()
    valid = tf_records.dataset_from_tokens(VALID, 2, CONFIG.tgt_len)
    history = lm.fit(data(), epochs=20, verbose=0, validation_data=valid, callbacks=[
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=0, min_delta=10.0)])
    assert len(history.history["val_loss"]) == 2  # no improvement of 10 nats: stopped
    memory = lm.memory_to_host()
    loss = lm.evaluate(valid, verbose=0)
    np.testing.assert_array_equal(lm.memory_to_host(), memory)  # training memory untouched
    assert loss == pytest.approx(history.history["val_loss"][-1], rel=1e-6)
    trainer = Trainer(lm.backbone, make_optimizer(1e-3), tf.distribute.get_strategy())
    expected = trainer.evaluate(iter(valid), per_replica_batch=2)
    assert loss == pytest.approx(expected.loss, rel=1e-6)


def test_tensorboard_reads_the_losses(whole):
    """The TensorBoard callback of `whole`'s run: the epoch losses of its history."""
    acc = event_accumulator.EventAccumulator(os.path.join(whole["logs"], "train"),
                                             size_guidance={"tensors": 0})
    acc.Reload()
    logged = [float(tf.make_ndarray(e.tensor_proto)) for e in acc.Tensors("epoch_loss")]
    assert len(logged) == EPOCHS
    np.testing.assert_allclose(logged, whole["history"]["loss"], rtol=1e-6)
    assert "epoch_grad_norm" in acc.Tags()["tensors"]


def test_memory_is_reset_only_by_reset_memory_at_epoch_start(whole):
    """Also the control of the resume test: epoch 1 of this run starts from everything of
    `whole`'s epoch 0 end (weights, Adam's state, the data's position) but the memory, and its
    losses and memory differ far outside that test's tolerance (1e-6 relative)."""
    carried_record = whole["record"]
    np.testing.assert_array_equal(carried_record.starts[1], carried_record.ends[0])

    reset, reset_record = new_lm(), Record()
    reset.fit(data(), epochs=2, verbose=0, callbacks=[ResetMemoryAtEpochStart(), reset_record])
    assert not reset_record.starts[1].any()
    np.testing.assert_array_equal(reset_record.ends[0], carried_record.ends[0])
    np.testing.assert_array_equal(reset_record.batches[:STEPS], carried_record.batches[:STEPS])
    assert (abs(reset_record.batches[STEPS] - carried_record.batches[STEPS])
            > 1e-4 * carried_record.batches[STEPS])
    assert not np.allclose(reset_record.ends[1], carried_record.ends[1], rtol=1e-4)


def test_saved_memory_moves_between_replica_counts(tmp_path, two_cpu_devices):
    """Weights saved on two replicas (each with its own 2 streams' memory) load on one device
    with all 4 streams' memory in order: training goes on with the same losses."""
    with tf.distribute.MirroredStrategy(two_cpu_devices).scope():
        two = new_lm()
    two.fit(data(), epochs=1, verbose=0)
    path = str(tmp_path / "two.weights.h5")
    two.save_weights(path)
    one = new_lm(seed=4)
    one.load_weights(path)
    np.testing.assert_array_equal(one.memory_to_host(), two.memory_to_host())
    assert np.abs(one.memory_to_host()).max() > 0.1
    losses = [lm.fit(data(), epochs=1, verbose=0).history["loss"][0] for lm in (two, one)]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    two.reset_memory()
    assert not two.memory_to_host().any()


def test_weights_file_holds_the_loss_scale(tmp_path):
    """The dynamic loss scale (doubled every `growth_interval` finite steps) is saved and
    loaded with the weights, so that a resumed mixed-precision run scales as before."""
    lm = new_lm()
    lm.compile(optimizer=keras.optimizers.Adam(1e-2), loss_scaling=True,
               initial_loss_scale=4.0, growth_interval=2)
    lm.fit(data(), epochs=1, verbose=0)
    assert lm._replica_step.loss_scale.numpy() == 4.0 * 2 ** (STEPS // 2)
    path = str(tmp_path / "scaled.weights.h5")
    lm.save_weights(path)
    fresh = new_lm()
    fresh.compile(optimizer=keras.optimizers.Adam(1e-2), loss_scaling=True,
                  initial_loss_scale=4.0, growth_interval=2)
    fresh.load_weights(path)
    assert fresh._replica_step.loss_scale.numpy() == lm._replica_step.loss_scale.numpy()
    good_steps = fresh._replica_step.good_steps.numpy()
    assert good_steps == lm._replica_step.good_steps.numpy() == STEPS % 2
