"""One Transformer-XL layer: attention over memory + segment, then feed-forward."""
import keras

from txl_tf.layers.feed_forward import PositionwiseFeedForward
# Register the attention layers the paper's variants name (`txl_tf/model/attention_variants.py`).
from txl_tf.layers import learned_relative_attention  # noqa: F401
from txl_tf.layers import relative_attention  # noqa: F401

DEFAULT_ATTENTION = "txl_tf>RelativeMultiHeadAttention"


def attention_layer_class(name: str):
    """The attention layer class registered with Keras under `name` ("package>ClassName").

    Raises:
      ValueError: no layer is registered under `name`.
    """
    cls = keras.saving.get_registered_object(name)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, keras.layers.Layer)):
        raise ValueError(f"attention layer {name!r} is not registered with Keras; decorate its "
                         "class with keras.saving.register_keras_serializable and import it "
                         "before building the model.")
    return cls


@keras.saving.register_keras_serializable(package="txl_tf")
class TransformerXLBlock(keras.layers.Layer):
    """An attention sub-layer followed by `PositionwiseFeedForward` (reference `rel_attn` and
    `ff` scopes).

    The attention sub-layer is the layer an `AttentionVariant`
    (`txl_tf/model/attention_variants.py`) names; every such layer takes the call signature of
    `RelativeMultiHeadAttention`.

    Args:
      d_model, n_head, d_head, d_inner, dropout, dropatt, pre_lnorm, layer_norm_epsilon,
      kernel_initializer: as the two sub-layers.
      attention: Registered Keras name of the attention layer class (the variant's
        `attention`), by default `RelativeMultiHeadAttention`.
      attention_options: Its constructor arguments beyond the common ones (the variant's
        `attention_options(config)`), e.g. {"relative": False} for attention without position
        terms or {"max_klen": 12} for `LearnedRelativeMultiHeadAttention`.

    Call arguments:
      h: [B, Q, D]; mem: [B, M, D] or None; pos_emb: [K, D]; r_w_bias, r_r_bias: [N, H];
      allowed: bool [Q, K]; training: dropout on/off; clamp_len: clamp of learned position
      tables: all passed to the attention, which reads those its mechanisms need.

    Returns:
      [B, Q, D].
    """

    def __init__(self, d_model, n_head, d_head, d_inner, dropout=0.0, dropatt=0.0,
                 pre_lnorm=False, layer_norm_epsilon=1e-12, kernel_initializer="glorot_uniform",
                 attention=DEFAULT_ATTENTION, attention_options=None, **kwargs):
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
        self.attention_name = attention
        self.attention_options = dict(attention_options or {})
        self.attention = attention_layer_class(attention)(
            d_model, n_head, d_head, dropout=dropout, dropatt=dropatt, pre_lnorm=pre_lnorm,
            layer_norm_epsilon=layer_norm_epsilon, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="rel_attn", **self.attention_options)
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
        out = self.attention(h, mem=mem, pos_emb=pos_emb, r_w_bias=r_w_bias, r_r_bias=r_r_bias,
                             allowed=allowed, training=training, clamp_len=clamp_len)
        return self.feed_forward(out, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, n_head=self.n_head, d_head=self.d_head, d_inner=self.d_inner,
            dropout=self.dropout, dropatt=self.dropatt, pre_lnorm=self.pre_lnorm,
            layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            attention=self.attention_name, attention_options=dict(self.attention_options))
        return config
