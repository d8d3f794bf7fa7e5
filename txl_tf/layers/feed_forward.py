"""Position-wise feed-forward sub-layer with residual connection and LayerNorm."""
import keras
import tensorflow as tf

from txl_tf.layers.dropout import ReplicaDropout


@keras.saving.register_keras_serializable(package="txl_tf")
class PositionwiseFeedForward(keras.layers.Layer):
    """LayerNorm(x + Dropout(W2 Dropout(ReLU(W1 x + b1)) + b2)), or the pre-LN variant.

    Weights as the reference `ff/layer_1` [D, Di] + [Di], `ff/layer_2` [Di, D] + [D],
    `ff/LayerNorm` [D].

    Args:
      d_model, d_inner: D and the hidden width Di.
      dropout: rate after the ReLU and after the second projection.
      pre_lnorm: normalise the input instead of the output.
      layer_norm_epsilon: LayerNorm epsilon.
      kernel_initializer: initialiser of both kernels (biases start at zero).

    Call arguments:
      x: [B, Q, D]; training: dropout on/off.

    Returns:
      [B, Q, D].
    """

    def __init__(self, d_model, d_inner, dropout=0.0, pre_lnorm=False, layer_norm_epsilon=1e-12,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_inner = d_inner
        self.dropout = dropout
        self.pre_lnorm = pre_lnorm
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.layer_1 = keras.layers.Dense(d_inner, activation="relu",
                                          kernel_initializer=self.kernel_initializer,
                                          dtype=self.dtype_policy, name="layer_1")
        self.layer_2 = keras.layers.Dense(d_model, kernel_initializer=self.kernel_initializer,
                                          dtype=self.dtype_policy, name="layer_2")
        self.inner_dropout = ReplicaDropout(dropout, dtype=self.dtype_policy)
        self.out_dropout = ReplicaDropout(dropout, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")

    def build(self, input_shape=None):
        self.layer_1.build((None, None, self.d_model))
        self.layer_2.build((None, None, self.d_inner))
        self.layer_norm.build((None, None, self.d_model))
        self.built = True

    def call(self, x, training=False):
        inner = self._normalize(x) if self.pre_lnorm else x
        inner = self.inner_dropout(self.layer_1(inner), training=training)
        out = self.out_dropout(self.layer_2(inner), training=training)
        if self.pre_lnorm:
            return x + out
        return self._normalize(x + out)

    def _normalize(self, x):
        return tf.cast(self.layer_norm(tf.cast(x, tf.float32)), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, d_inner=self.d_inner, dropout=self.dropout,
            pre_lnorm=self.pre_lnorm, layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer))
        return config
