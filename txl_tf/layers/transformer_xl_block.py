"""One Transformer-XL layer: relative attention over memory + segment, then feed-forward."""
import keras

from txl_tf.layers.feed_forward import PositionwiseFeedForward
from txl_tf.layers.relative_attention import RelativeMultiHeadAttention


@keras.saving.register_keras_serializable(package="txl_tf")
class TransformerXLBlock(keras.layers.Layer):
    """`RelativeMultiHeadAttention` followed by `PositionwiseFeedForward` (reference `rel_attn`
    and `ff` scopes).

    Args:
      d_model, n_head, d_head, d_inner, dropout, dropatt, pre_lnorm, layer_norm_epsilon,
      kernel_initializer: as the two sub-layers.
      relative: False for the vanilla Transformer (`attn_type=2`).

    Call arguments:
      h: [B, Q, D]; mem: [B, M, D] or None; pos_emb: [K, D]; r_w_bias, r_r_bias: [N, H];
      allowed: bool [Q, K]; training: dropout on/off.

    Returns:
      [B, Q, D].
    """

    def __init__(self, d_model, n_head, d_head, d_inner, dropout=0.0, dropatt=0.0,
                 pre_lnorm=False, layer_norm_epsilon=1e-12, kernel_initializer="glorot_uniform",
                 relative=True, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.n_head = n_head
        self.d_head = d_head
        self.d_inner = d_inner
        self.dropout = dropout
        self.dropatt = dropatt
        self.pre_lnorm = pre_lnorm
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.relative = relative
        self.attention = RelativeMultiHeadAttention(
            d_model, n_head, d_head, dropout=dropout, dropatt=dropatt, pre_lnorm=pre_lnorm,
            layer_norm_epsilon=layer_norm_epsilon, kernel_initializer=self.kernel_initializer,
            relative=relative, dtype=self.dtype_policy, name="rel_attn")
        self.feed_forward = PositionwiseFeedForward(
            d_model, d_inner, dropout=dropout, pre_lnorm=pre_lnorm,
            layer_norm_epsilon=layer_norm_epsilon, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="ff")

    def build(self, input_shape=None):
        self.attention.build()
        self.feed_forward.build()
        self.built = True

    def call(self, h, mem=None, pos_emb=None, r_w_bias=None, r_r_bias=None, allowed=None,
             training=False):
        out = self.attention(h, mem=mem, pos_emb=pos_emb, r_w_bias=r_w_bias, r_r_bias=r_r_bias,
                             allowed=allowed, training=training)
        return self.feed_forward(out, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, n_head=self.n_head, d_head=self.d_head, d_inner=self.d_inner,
            dropout=self.dropout, dropatt=self.dropatt, pre_lnorm=self.pre_lnorm,
            layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            relative=self.relative)
        return config
