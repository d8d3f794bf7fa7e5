"""Learned relative attention of Shaw et al. (2018), the `shaw` variant of
`txl_tf/model/attention_variants.py` (the paper's ablation).

Size glossary: B batch, Q segment (query) length, M memory length, K = M + Q key length,
D d_model, N heads, H head size, T table length (max_klen).

For query i (key position M + i) and key j at distance d = M + i - j the score is

    A[i, j] = ((q_i + u) . k_j  +  q_i . E[d]  +  b[d]) / sqrt(H)

with learned per-layer tables E [T, N, H] (relative embeddings) and b [T, N] (relative
biases) and a learned u [N, H]: the reference PyTorch `RelLearnableMultiHeadAttn` terms (a), (b),
(c) and a per-distance bias, without Transformer-XL's sinusoid, W_r projection and v bias.

Table rows, as the reference: the last row is distance 0, row T-1-d distance d. `clamp_len > 0`
keeps only the last clamp_len rows; every distance beyond the rows in use shares the first row
in use (the reference pads with it). So distance d reads row T-1-min(d, n-1), n = T or
min(T, clamp_len): distances are clamped to the longest trained one.
"""
import keras
import tensorflow as tf

from txl_tf.layers.relative_attention import RelativeMultiHeadAttention, rel_shift


def learned_table_rows(klen, table_len: int, clamp_len: int = -1) -> tf.Tensor:
    """Rows of a learned relative table for the distances K-1, ..., 0 (descending).

    Args:
      klen: number of keys K, a scalar int (tensor or Python).
      table_len: rows T of the table.
      clamp_len: use only the last clamp_len rows when > 0.

    Returns:
      int32 [K]; entry p is the row of distance K-1-p, i.e. T-1-min(K-1-p, n-1) with
      n = min(T, clamp_len) if clamp_len > 0 else T.
    """
    used = min(table_len, clamp_len) if clamp_len is not None and clamp_len > 0 else table_len
    distances = tf.range(tf.cast(klen, tf.int32) - 1, -1, -1, dtype=tf.int32)
    return table_len - 1 - tf.minimum(distances, used - 1)


@keras.saving.register_keras_serializable(package="txl_tf")
class LearnedRelativeMultiHeadAttention(RelativeMultiHeadAttention):
    """Shaw et al. relative attention sub-layer with residual connection and LayerNorm.

    Weights: qkv [D, 3, N, H], o [N, H, D] and layer_norm as `RelativeMultiHeadAttention`
    (no `r`), plus this layer's r_emb [T, N, H] and r_w_bias [N, H] (the main initializer, as
    the reference's `init_weight`) and r_bias [T, N] (zeros, as the reference's `init_bias`).
    The reference keeps these as [L, ...] tensors in the model and slices one per layer; here
    each layer owns its slice.

    Args:
      d_model, n_head, d_head, dropout, dropatt, pre_lnorm, layer_norm_epsilon,
      kernel_initializer: as `RelativeMultiHeadAttention`.
      max_klen: rows T of the relative tables (the reference's tgt_len + mem_len).

    Call arguments (those of `RelativeMultiHeadAttention`):
      h: [B, Q, D] segment input.
      mem: [B, M, D] memory, or None (M = 0).
      pos_emb, r_w_bias, r_r_bias: unused (the layer holds its own tables and u).
      allowed: bool [Q, K] attention mask (see `attention_mask`).
      training: dropout on/off.
      clamp_len: use only the last clamp_len table rows when > 0 (a Python int).

    Returns:
      [B, Q, D].

    Example:
      >>> layer = LearnedRelativeMultiHeadAttention(16, 2, 8, max_klen=12)
      >>> layer(tf.zeros([3, 4, 16]), mem=tf.zeros([3, 8, 16]),
      ...       allowed=txl_tf.attention_mask(4, 8)).shape
      TensorShape([3, 4, 16])
    """

    def __init__(self, d_model, n_head, d_head, max_klen, **kwargs):
        kwargs.pop("relative", None)
        super().__init__(d_model, n_head, d_head, relative=False, **kwargs)
        if not isinstance(max_klen, int) or max_klen < 1:
            raise ValueError(f"max_klen must be a positive integer, got {max_klen!r}")
        self.max_klen = max_klen

    def build(self, input_shape=None):
        super().build(input_shape)
        n, h, t = self.n_head, self.d_head, self.max_klen
        self.r_emb = self.add_weight(name="r_emb", shape=(t, n, h),
                                     initializer=self.kernel_initializer)
        self.r_w_bias = self.add_weight(name="r_w_bias", shape=(n, h),
                                        initializer=self.kernel_initializer)
        self.r_bias = self.add_weight(name="r_bias", shape=(t, n), initializer="zeros")
        self.built = True

    def call(self, h, mem=None, pos_emb=None, r_w_bias=None, r_r_bias=None, allowed=None,
             training=False, clamp_len=-1):
        del pos_emb, r_w_bias, r_r_bias  # its own tables and u score the positions
        def scores(q, k):
            rows = learned_table_rows(tf.shape(k)[2], self.max_klen, clamp_len)  # [K]
            r_emb = tf.cast(tf.gather(self.r_emb, rows), q.dtype)  # [K, N, H]
            r_bias = tf.cast(tf.transpose(tf.gather(self.r_bias, rows)), q.dtype)  # [N, K]
            u = tf.cast(self.r_w_bias, q.dtype)[:, None, None, :]
            content = tf.einsum("nbqh,nbkh->nbqk", q + u, k)
            position = tf.einsum("nbqh,knh->nbqk", q, r_emb) + r_bias[:, None, None, :]
            return content + rel_shift(
                position, for_backprop=not (training is None or training is False))

        return self.attend(h, mem, allowed, training, scores)

    def get_config(self):
        config = super().get_config()
        config.pop("relative", None)
        config.update(max_klen=self.max_klen)
        return config
