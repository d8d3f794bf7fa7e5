"""Sinusoidal position encodings: relative (Transformer-XL) and absolute (vanilla)."""
import keras
import tensorflow as tf


def sinusoid(positions: tf.Tensor, d_model: int) -> tf.Tensor:
    """Sinusoids of `positions` ([n] float32) -> [n, d_model] float32.

    Frequencies are 1 / 10000**(2j / d_model), j = 0 .. d_model/2 - 1, and the result is the
    concatenation [sin(pos * f), cos(pos * f)] (halves, not interleaved), as the reference.
    """
    inv_freq = 1.0 / (10000.0 ** (tf.range(0, d_model, 2.0, dtype=tf.float32) / d_model))
    angles = tf.einsum("i,j->ij", tf.cast(positions, tf.float32), inv_freq)
    return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)


def relative_positions(klen, clamp_len: int = -1, offset=0) -> tf.Tensor:
    """Relative distances in descending order: [klen-1, ..., 1, 0] as float32, clipped to at most
    `clamp_len` when clamp_len > 0.

    `offset` (an int, or int32 [] tensor) is subtracted first: [klen-1-offset, ..., -offset], the
    absolute positions counted back from key klen-1-offset when the last `offset` keys are
    padding (`TransformerXL.call(segment_padding=...)`)."""
    positions = tf.range(tf.cast(klen, tf.float32) - 1.0, -1.0, -1.0, dtype=tf.float32)
    if not (isinstance(offset, int) and offset == 0):
        positions = positions - tf.cast(offset, tf.float32)
    if clamp_len is not None and clamp_len > 0:
        positions = tf.minimum(positions, float(clamp_len))
    return positions


@keras.saving.register_keras_serializable(package="txl_tf")
class RelativePositionalEncoding(keras.layers.Layer):
    """Sinusoids of the descending positions klen-1, ..., 0: the relative distances R of
    relative attention (the `ours` variant of `txl_tf/model/attention_variants.py`), and the
    absolute positions of the `vaswani` variant, which the reference counts backwards from the
    newest key in the same way.

    Args:
      d_model: width of the encoding (even).

    Call arguments:
      klen: number of keys K (memory + segment), a scalar int tensor.
      clamp_len: clip distances to at most this value when > 0.
      offset: subtract this from every distance first (`relative_positions`); default 0.

    Returns:
      [K, d_model] float32; row p encodes distance K-1-p (minus offset).
    """

    def __init__(self, d_model: int, **kwargs):
        super().__init__(**kwargs)
        if d_model % 2:
            raise ValueError(f"d_model must be even, got {d_model}")
        self.d_model = d_model

    def call(self, klen, clamp_len=-1, offset=0):
        return sinusoid(relative_positions(klen, clamp_len, offset), self.d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model)
        return config
