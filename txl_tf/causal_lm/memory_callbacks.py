"""Keras callbacks that act on the memory of a `TransformerXLCausalLM`."""
import keras


class ResetMemoryAtEpochStart(keras.callbacks.Callback):
    """Zeroes the training memory at the start of every epoch, for datasets whose epochs are
    separate passes (by default `fit` carries the memory across epochs, as the `Trainer`
    carries it when the data repeats).

    Example:
      >>> lm.fit(dataset, epochs=3, callbacks=[ResetMemoryAtEpochStart()])
    """

    def on_epoch_begin(self, epoch, logs=None):
        self.model.reset_memory()
