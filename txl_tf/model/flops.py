"""Model FLOPs of a Transformer-XL step, counted from the configuration (for MFU, and for the
duration estimate of a training run: `txl_tf/training/duration_estimate.py`).

Counts the multiply-adds (2 FLOPs each) of every matrix product the model's maths needs, the
usual MFU convention: element-wise work (softmax, LayerNorm, dropout, Adam) is not counted, the
causal mask does not halve the attention products (every implementation computes the full
Q x K scores), and work an implementation does beyond the maths (e.g. gradients of the
memory, which is under stop-gradient) is not counted.

Per segment of Q tokens with memory M (K = M + Q), per layer, forward:
  q projection      2 Q D N H            k, v projections  2 * 2 K D N H
  r projection      2 K D N H / B (relative sinusoids; once per batch, shared by its B rows)
  content scores    2 Q K N H            position scores   2 Q K N H (with position scores)
  probs x values    2 Q K N H            output projection 2 Q N H D
  feed-forward      2 * 2 Q D Di
plus the embedding projection 2 Q d_embed D (when there is one) and the softmax output layer
2 Q d_embed V (+ its projection 2 Q D d_embed when there is one). With div_val > 1 the
projections are counted at bin 0's width and all V logits in full (an approximation).

The position terms are the attention variant's (`AttentionVariant.position_flops` of
`txl_tf/model/attention_variants.py`).

Training = forward + backward, where the backward of a product costs twice its forward (input
and weight gradients), except where the input needs no gradient: the memory rows of the k/v
projections and the position encodings of the r projection get only the weight gradient.
"""


def _dims(config):
    c = config
    nh = c.n_head * c.d_head
    return c.d_model, nh, c.d_inner, c.n_layer, c.d_embed, c.n_token


def _embedding_forward(config, q):
    d, _, _, _, d_embed, v = _dims(config)
    needs_proj = (d_embed != d) if config.div_val == 1 else config.proj_same_dim or d_embed != d
    embed = 2.0 * q * d_embed * d if needs_proj else 0.0
    softmax = 2.0 * q * d_embed * v + (2.0 * q * d * d_embed if needs_proj else 0.0)
    return embed, softmax


def forward_flops(config, batch_size, q, m):
    """Forward FLOPs of one [batch_size, q] segment with memory m. Returns (total, parts)."""
    d, nh, di, n_layer, _, _ = _dims(config)
    position_scores, r = config.attention_variant.position_flops(config, q, m)
    k = m + q
    b = float(batch_size)
    per_row = {
        "q": 2.0 * q * d * nh,
        "kv": 2.0 * 2 * k * d * nh,
        "scores": 2.0 * q * k * nh + position_scores,
        "values": 2.0 * q * k * nh,
        "o": 2.0 * q * nh * d,
        "ff": 2.0 * 2 * q * d * di,
    }
    layer = sum(per_row.values()) * b + r
    embed, softmax = _embedding_forward(config, q)
    total = n_layer * layer + b * (embed + softmax)
    parts = dict(per_row, r=r, embed=embed, softmax=softmax)
    return total, parts


def forward_flops_per_token(config, batch_size, q, m):
    """Forward (evaluation) model FLOPs per token."""
    return forward_flops(config, batch_size, q, m)[0] / (batch_size * q)


def train_flops_per_token(config, batch_size, q, m):
    """Training-step (forward + backward) model FLOPs per token."""
    d, nh, _, n_layer, _, _ = _dims(config)
    forward, parts = forward_flops(config, batch_size, q, m)
    # Backward = 2 x forward, less the input gradients that are not needed: the memory rows of
    # the k and v projections and the constant encodings of the r projection.
    saved = n_layer * (batch_size * 2.0 * 2 * m * d * nh + parts["r"])
    return (3.0 * forward - saved) / (batch_size * q)
