"""One Transformer-XL layer: attention over memory + segment, then feed-forward."""
import keras

from txl_tf.layers.feed_forward import PositionwiseFeedForward
from txl_tf.layers.learned_relative_attention import LearnedRelativeMultiHeadAttention
from txl_tf.layers.relative_attention import RelativeMultiHeadAttention


@keras.saving.register_keras_serializable(package="txl_tf")
class TransformerXLBlock(keras.layers.Layer):
    """`RelativeMultiHeadAttention` followed by `PositionwiseFeedForward` (reference `rel_attn`
    and `ff` scopes).

    Args:
      d_model, n_head, d_head, d_inner, dropout, dropatt, pre_lnorm, layer_norm_epsilon,
      kernel_initializer: as the two sub-layers.
      relative: False for attention without position terms (an `AttentionVariant` of
        `txl_tf/attention_variants.py` without `position_scores`).
      max_klen: when given, the attention is `LearnedRelativeMultiHeadAttention` with tables of
        max_klen rows (a `learned_relative` variant) and `relative` is not used.

    Call arguments:
      h: [B, Q, D]; mem: [B, M, D] or None; pos_emb: [K, D]; r_w_bias, r_r_bias: [N, H];
      allowed: bool [Q, K]; training: dropout on/off; clamp_len: clamp of the learned relative
      tables (with max_klen only; relative sinusoids come clamped in pos_emb).

    Returns:
      [B, Q, D].
    """

    def __init__(self, d_model, n_head, d_head, d_inner, dropout=0.0, dropatt=0.0,
                 pre_lnorm=False, layer_norm_epsilon=1e-12, kernel_initializer="glorot_uniform",
                 relative=True, max_klen=None, **kwargs):
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
        self.max_klen = max_klen
        common = dict(dropout=dropout, dropatt=dropatt, pre_lnorm=pre_lnorm,
                      layer_norm_epsilon=layer_norm_epsilon,
                      kernel_initializer=self.kernel_initializer, dtype=self.dtype_policy,
                      name="rel_attn")
        if max_klen is None:
            self.attention = RelativeMultiHeadAttention(d_model, n_head, d_head,
                                                        relative=relative, **common)
        else:
            self.attention = LearnedRelativeMultiHeadAttention(d_model, n_head, d_head,
                                                               max_klen=max_klen, **common)
        self.feed_forward = PositionwiseFeedForward(
            d_model, d_inner, dropout=dropout, pre_lnorm=pre_lnorm,
            layer_norm_epsilon=layer_norm_epsilon, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="ff")

    def build(self, input_shape=None):
        self.attention.build()
        self.feed_forward.build()
        self.built = True

    def call(self, h, mem=None, pos_emb=None, r_w_bias=None, r_r_bias=None, allowed=None,
             training=False, clamp_len=-1):
        if self.max_klen is None:
            out = self.attention(h, mem=mem, pos_emb=pos_emb, r_w_bias=r_w_bias,
                                 r_r_bias=r_r_bias, allowed=allowed, training=training)
        else:
            out = self.attention(h, mem=mem, allowed=allowed, training=training,
                                 clamp_len=clamp_len)
        return self.feed_forward(out, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, n_head=self.n_head, d_head=self.d_head, d_inner=self.d_inner,
            dropout=self.dropout, dropatt=self.dropatt, pre_lnorm=self.pre_lnorm,
            layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            relative=self.relative, max_klen=self.max_klen)
        return config
