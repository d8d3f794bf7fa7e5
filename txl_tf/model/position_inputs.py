"""The positions `TransformerXL` feeds its blocks, by attention variant.

Size glossary: B batch, Q segment length, M memory length, K = M + Q, D d_model.

`config.attention_variant` chooses the position encoding of the paper's ablation (Table 6),
with the reference PyTorch semantics: one record of `txl_tf/model/attention_variants.py`. Every
block builds the attention layer the record names (`attention`, `attention_options`) and
`TransformerXL` builds and feeds the mechanisms the record marks, with the functions here;
every one works with memory (mem_len > 0) and without (mem_len = 0):
  relative_sinusoids (Transformer-XL): sinusoids of the distances K-1 .. 0 and the model's
     u/v biases, fed to every block's attention.
  learned_relative (Shaw et al.): each block's `LearnedRelativeMultiHeadAttention` reads
     its own tables; the model feeds it clamp_len.
  input_sinusoids (Vaswani et al.): absolute sinusoids added to the input of layer 0.
     Positions count backwards over the K keys of the call: key j of [memory; segment] has
     position K-1-j, clipped to at most clamp_len when clamp_len > 0, so the newest token
     has position 0 (also without memory). The segment's word embeddings get the encodings
     of the last Q positions (Q-1 .. 0) before dropout; the layer-0 memory gets those of the
     first M (K-1 .. Q) added where it is read. The stored layer-0 memory is layer 0's input
     as computed for its own segment: dropout(word embedding + encoding of its position
     within that segment); the read-time encoding is not stored. Upper layers carry no
     position encoding.
  layer_embeddings (Al-Rfou et al.): learned absolute embeddings, one table per layer
     (`LearnedPositionEmbedding`, weights `pos_emb_{i}`), added to the memory and the
     segment at the input of every layer. The memory is still each layer's input without
     the embedding: the embedding is added where it is used, for the key positions of this
     call.
The reference adds the memory encodings of the absolute encodings in place to tensors it
also caches, so when mem_len > Q its kept-over states carry the encodings of earlier reads
as well; that is not reproduced.

Temporal confusion (the paper's section 3.3) of the absolute encodings with memory: a state
in the memory was computed at its position within its own segment (with input sinusoids,
offset k of a segment of length Q has position Q-1-k), so the tokens at the same offset of
every segment carry the same encoding; input sinusoids read the layer-0 memory with a
second encoding (of K-1-j) added on top, and the memories of the upper layers with none.
The segments read with memory therefore differ from one long pass over the same tokens,
which the relative encodings reproduce exactly. Without memory, positions count back from
the segment's end, so a prefix of a segment is not read as it would be alone. The zero
memory of `init_mems` is read like any other: with input sinusoids its layer-0 states are
read as the bare encodings.
"""
import tensorflow as tf


def relative_sinusoids(positional_encoding, klen, clamp_len, dtype):
    """`relative_sinusoids`: the sinusoids [K, D] of the distances K-1 .. 0 (clipped to
    clamp_len when > 0), cast to `dtype` (the model applies its dropout to them)."""
    return tf.cast(positional_encoding(klen, clamp_len=clamp_len), dtype)


def add_input_sinusoids(word_emb, positional_encoding, mlen, klen, clamp_len, padding=0):
    """`input_sinusoids`: (word embeddings [B, Q, D] with the encodings of the last Q key
    positions added, float32 encodings [M, D] of the first M to add to the layer-0 memory where
    it is read). The same descending, clamped positions K-1 .. 0 as the relative encoding;
    `padding` trailing padding tokens are not counted."""
    absolute = positional_encoding(klen, clamp_len=clamp_len, offset=padding)  # [K, D] float32
    return word_emb + tf.cast(absolute[mlen:], word_emb.dtype), absolute[:mlen]


def add_layer_embedding(embedding, h, mem, mlen, klen, padding=0):
    """`layer_embeddings`: the layer's learned positions added to memory [B, M, D] (or None)
    and segment [B, Q, D] (`padding` trailing padding tokens not counted); returns (h, mem)."""
    positions = embedding(klen, offset=padding)  # [K, D]
    h = h + tf.cast(positions[mlen:], h.dtype)
    if mem is not None:
        mem = tf.cast(mem, tf.float32) + tf.cast(positions[:mlen], tf.float32)
    return h, mem


def layer_biases(r_w_bias, r_r_bias, layer, untie_r):
    """`relative_sinusoids`: the u and v biases [N, H] of block `layer` (one pair per layer
    with `untie_r`, else one shared pair)."""
    if untie_r:
        return r_w_bias[layer], r_r_bias[layer]
    return r_w_bias, r_r_bias
