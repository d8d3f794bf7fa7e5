"""Relative multi-head attention of Transformer-XL (paper section 3.3, appendix B).

Size glossary: B batch, Q segment (query) length, M memory length, K = M + Q key length,
D d_model, N heads, H head size.

For query i (absolute key position M + i) and key j the score is

    A[i, j] = (q_i + u) . k_j  +  (q_i + v) . (W_r R[M + i - j])
              \\__ (a) + (c) __/    \\________ (b) + (d) ________/

where R[d] is the sinusoidal encoding of distance d. Terms (b) + (d) are computed for every
query against all K encodings in descending-distance order and then aligned with `rel_shift`
(reshapes and one slice or pad, no gather and no loop). Inside the layer the heads lead:
q, k, v are [N, B, T, H] and scores [N, B, Q, K], so every attention product is a plain
batched matmul without transposes.
"""
import math

import keras
import tensorflow as tf

from txl_tf.layers.dropout import ReplicaDropout
from txl_tf.layers.projection_weights import ProjectionWeights
from txl_tf.layers.attention_mask import attention_mask  # noqa: F401  (re-exported for callers)

try:  # Whether a graph is being compiled by XLA (tf.function(jit_compile=True), TPU).
    from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext as _in_xla
except ImportError:  # pragma: no cover - a TF without it: for_backprop alone decides
    _in_xla = None

_MASKED_SCORE = -1e30  # Applied in float32 only, so float16 never sees it.


def rel_shift(x: tf.Tensor, for_backprop: bool = True) -> tf.Tensor:
    """Align position scores computed against distances K-1, ..., 0 with key positions.

    Args:
      x: [..., Q, K] (the attention layer passes [N, B, Q, K]) where x[..., i, p] is the score
        of query i against distance K-1-p.
      for_backprop: whether a gradient will be taken through it (the layer passes `training`);
        only chooses between two forms with identical results.

    Returns:
      [..., Q, K] where out[..., i, j] = x[..., i, j + Q-1-i], the score for distance
      (K-Q) + i - j, for every j <= (K-Q) + i. Entries with j > (K-Q) + i hold unrelated values
      (the causal mask removes them), as in the reference implementation.

    The two forms: the reference's pad-and-reshape (`rel_shift_by_pad`) has the cheaper
    gradient and is used for training and inside XLA; the slice form (`rel_shift_by_slice`) is
    the cheaper forward pass outside XLA.
    """
    if for_backprop or _in_xla_compilation():
        return rel_shift_by_pad(x)
    return rel_shift_by_slice(x)


def _in_xla_compilation() -> bool:
    return _in_xla is not None and _in_xla(tf.compat.v1.get_default_graph())


def rel_shift_by_pad(x: tf.Tensor) -> tf.Tensor:
    """`rel_shift` as the reference computes it: prepend a zero column, view the [Q, K+1]
    matrix as [K+1, Q], drop its first row and view the rest as [Q, K]."""
    shape = tf.shape(x)
    lead, q, k = shape[:-2], shape[-2], shape[-1]
    rank = x.shape.rank
    x = tf.pad(x, [[0, 0]] * (rank - 1) + [[1, 0]])  # [..., Q, K+1]
    x = tf.reshape(x, tf.concat([lead, [k + 1, q]], 0))[..., 1:, :]  # [..., K, Q]
    return tf.reshape(x, shape)


def rel_shift_by_slice(x: tf.Tensor) -> tf.Tensor:
    """`rel_shift` without the pad: row i's wanted entries start at flat offset
    i*K + Q-1-i = (Q-1) + i*(K-1) of the row-major [Q, K] matrix, so rows of K-1 entries read at
    stride K-1 from offset Q-1 are one contiguous slice of the flattened matrix. The last column
    (distance 0 for the last query, masked for every other query) is x's own."""
    shape = tf.shape(x)
    lead, q, k = shape[:-2], shape[-2], shape[-1]
    flat = tf.reshape(x, tf.concat([lead, [q * k]], 0))
    body = flat[..., q - 1:q - 1 + q * (k - 1)]  # [..., Q * (K-1)]
    body = tf.reshape(body, tf.concat([lead, [q, k - 1]], 0))
    return tf.concat([body, x[..., k - 1:]], axis=-1)


def masked_softmax(scores: tf.Tensor, allowed: tf.Tensor) -> tf.Tensor:
    """Softmax over keys in float32 with disallowed keys removed.

    Args:
      scores: [..., Q, K] attention logits, any float dtype (the layer passes [N, B, Q, K]).
      allowed: bool [Q, K] (or broadcastable to scores).
    Returns:
      float32 probabilities shaped like scores.
    """
    scores = tf.cast(scores, tf.float32)
    scores = tf.where(allowed, scores, tf.constant(_MASKED_SCORE, tf.float32))
    return tf.nn.softmax(scores, axis=-1)


@keras.saving.register_keras_serializable(package="txl_tf")
class RelativeMultiHeadAttention(ProjectionWeights, keras.layers.Layer):
    """Transformer-XL attention sub-layer with residual connection and LayerNorm.

    Weights (shapes match the reference checkpoint up to a reshape):
      qkv [D, 3, N, H]: the reference `qkv/kernel` [D, 3*N*H] (q, k, v blocks, head-major);
      r   [D, N, H]:    the reference `r/kernel`;
      o   [N, H, D]:    the reference `o/kernel`;
      layer_norm:       gamma, beta [D].
    The u/v biases belong to the model (shared or per layer) and are passed to `call`.
    qkv, r and o are its projections (`ProjectionWeights`): `quantize("int8")` keeps them as
    int8 + scale and `enable_lora(rank)` adds adapters, under the same names.

    Args:
      d_model, n_head, d_head: D, N, H.
      dropout: rate after the output projection; dropatt: rate on the attention probabilities.
      pre_lnorm: normalise the input instead of the output (the reference TF is post-LN).
      layer_norm_epsilon: LayerNorm epsilon (1e-12 as the reference).
      kernel_initializer: initialiser of qkv, r and o.
      relative: False gives the absolute-position attention of the `vaswani` and `alrfou`
        variants (`txl_tf/model/attention_variants.py`): score q.k only, no `r` weight, and
        `pos_emb`, `r_w_bias`, `r_r_bias` are ignored.

    Call arguments (the one signature of every attention layer an `AttentionVariant` names;
    each reads the arguments its mechanisms need and ignores the others):
      h: [B, Q, D] segment input.
      mem: [B, M, D] memory, or None (M = 0).
      pos_emb: [K, D] relative encodings for distances K-1..0 (dropout already applied).
      r_w_bias (u), r_r_bias (v): [N, H].
      allowed: bool [Q, K] attention mask (see `attention_mask`).
      training: dropout on/off.
      clamp_len: clamp of learned position tables (a Python int); unused here, since the
        sinusoids in pos_emb come clamped.

    Returns:
      [B, Q, D].
    """

    def __init__(self, d_model, n_head, d_head, dropout=0.0, dropatt=0.0, pre_lnorm=False,
                 layer_norm_epsilon=1e-12, kernel_initializer="glorot_uniform", relative=True,
                 **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.n_head = n_head
        self.d_head = d_head
        self.dropout = dropout
        self.dropatt = dropatt
        self.pre_lnorm = pre_lnorm
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.relative = relative
        self.scale = 1.0 / math.sqrt(d_head)
        self.attn_dropout = ReplicaDropout(dropatt, dtype=self.dtype_policy)
        self.out_dropout = ReplicaDropout(dropout, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")

    def build(self, input_shape=None):
        d, n, h = self.d_model, self.n_head, self.d_head
        self.qkv = self.add_weight(name="qkv", shape=(d, 3, n, h),
                                   initializer=self.kernel_initializer)
        if self.relative:
            self.r = self.add_weight(name="r", shape=(d, n, h),
                                     initializer=self.kernel_initializer)
        self.o = self.add_weight(name="o", shape=(n, h, d), initializer=self.kernel_initializer)
        self.layer_norm.build((None, None, d))
        self.built = True

    def projection_axes(self):
        """qkv and r read D (axis 0); o reads N, H (axes 0, 1)."""
        return {"qkv": (0,), "r": (0,), "o": (0, 1)}

    def call(self, h, mem=None, pos_emb=None, r_w_bias=None, r_r_bias=None, allowed=None,
             training=False, clamp_len=-1):
        del clamp_len  # the sinusoids in pos_emb come clamped
        if not self.relative:
            return self.attend(h, mem, allowed, training,
                               lambda q, k: tf.einsum("nbqh,nbkh->nbqk", q, k))

        def scores(q, k):
            r_head = tf.einsum("kd,dnh->nkh", tf.cast(pos_emb, q.dtype),
                               self.projection("r", q.dtype))  # [N, K, H]
            u = tf.cast(r_w_bias, q.dtype)[:, None, None, :]
            v_bias = tf.cast(r_r_bias, q.dtype)[:, None, None, :]
            content = tf.einsum("nbqh,nbkh->nbqk", q + u, k)  # terms (a) + (c)
            position = rel_shift(tf.einsum("nbqh,nkh->nbqk", q + v_bias, r_head),
                                 for_backprop=not (training is None or training is False))
            return content + position

        return self.attend(h, mem, allowed, training, scores)

    def attend(self, h, mem, allowed, training, score_fn):
        """The sub-layer around a score function: projections, masked softmax, dropout, output
        projection, residual and LayerNorm.

        Args:
          h: [B, Q, D] segment input; mem: [B, M, D] memory or None.
          allowed: bool [Q, K] attention mask.
          training: dropout on/off.
          score_fn: (q [N, B, Q, H], k [N, B, K, H]) -> unscaled scores [N, B, Q, K].

        Returns:
          [B, Q, D].
        """
        residual = h
        if self.pre_lnorm:
            h = self._normalize(h)
            if mem is not None:
                mem = self._normalize(mem)
        cat = h if mem is None else tf.concat([tf.cast(mem, h.dtype), h], axis=1)  # [B, K, D]
        w_q, w_k, w_v = tf.unstack(self.projection("qkv", h.dtype), axis=1)  # each [D, N, H]
        # Head-major internal layout [N, B, T, H]: every attention product below is then a
        # plain batched matmul over N (or N*B) with no transposes, and the position term's
        # weight gradient is one [N, K, B*Q] x [N, B*Q, H] product.
        q = tf.einsum("bqd,dnh->nbqh", h, w_q)
        k = tf.einsum("bkd,dnh->nbkh", cat, w_k)
        v = tf.einsum("bkd,dnh->nbkh", cat, w_v)
        probs = masked_softmax(score_fn(q, k) * self.scale, allowed)  # [N, B, Q, K]
        probs = self.attn_dropout(tf.cast(probs, v.dtype), training=training)
        attended = tf.einsum("nbqk,nbkh->nbqh", probs, v)
        out = tf.einsum("nbqh,nhd->bqd", attended, self.projection("o", attended.dtype))
        out = self.out_dropout(out, training=training)
        if self.pre_lnorm:
            return residual + out
        return self._normalize(residual + out)

    def _normalize(self, x):
        return tf.cast(self.layer_norm(tf.cast(x, tf.float32)), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model, n_head=self.n_head, d_head=self.d_head, dropout=self.dropout,
            dropatt=self.dropatt, pre_lnorm=self.pre_lnorm,
            layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            relative=self.relative)
        return config
