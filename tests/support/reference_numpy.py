"""An independent NumPy (float64) forward pass of Transformer-XL in the original TF layout.

It follows the reference TF code (kimiyoung/transformer-xl `tf/model.py`, reference brief
section 1) literally: time-major tensors [len, batch, ...], the concatenated `qkv` kernel applied
to [memory; segment], `rel_shift` by pad-and-reshape on [qlen, klen, batch, head], a float mask
where 1 means masked applied as score * (1 - M) - 1e30 * M, post-LayerNorm, and an adaptive
softmax with the TF cluster order. Options reproduce the two other conventions the importers
meet: Hugging Face's `same_length` mask (built from mem_len) and the original PyTorch cluster
order (reversed). Parameters are a dict under the TF1 checkpoint names (`transformer/...`),
exactly what a test writes into a TF1 checkpoint, so nothing here shares code with the importer.
"""
import numpy as np

P = "transformer/"


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def tf_mask(qlen, mlen, same_length):
    """The reference `_create_mask`: float [q, k], 1 = masked."""
    ones = np.ones([qlen, qlen])
    mask_u = np.triu(ones)
    mask_dia = np.diag(np.ones(qlen))
    ret = np.concatenate([np.zeros([qlen, mlen]), mask_u - mask_dia], 1)
    if same_length:
        mask_l = np.tril(ones)
        ret = np.concatenate([ret[:, :qlen] + mask_l - mask_dia, ret[:, qlen:]], 1)
    return ret


def hf_mask(qlen, mlen, mem_len, same_length):
    """transformers v4.30 `TransfoXLModel.forward` mask: float [q, k], 1 = masked."""
    klen = mlen + qlen
    ones = np.ones([qlen, klen])
    if same_length:
        mask_len = klen - mem_len
        shift = qlen - mask_len if mask_len > 0 else qlen
        return np.minimum(np.triu(ones, 1 + mlen) + np.tril(ones, -shift), 1.0)
    return np.triu(ones, 1 + mlen)


def _rel_shift(x):
    """x [q, k, b, n] -> pad a zero column in front of k, view as [k+1, q], drop a row."""
    q, k = x.shape[:2]
    x = np.concatenate([np.zeros((q, 1) + x.shape[2:]), x], 1)
    x = x.reshape((k + 1, q) + x.shape[2:])[1:]
    return x.reshape((q, k) + x.shape[2:])


def _bins(cfg):
    return [0] + list(cfg["cutoffs"]) + [cfg["n_token"]]


def _embedding_params(params, cfg):
    """Per bin (table rows of the bin, projection [d_i, d] or None)."""
    ends = _bins(cfg)
    out = []
    for i in range(len(ends) - 1):
        if cfg["div_val"] == 1:
            table = params[P + "adaptive_embed/lookup_table"][ends[i]:ends[i + 1]]
            proj = params.get(P + "adaptive_embed/proj_W")
        else:
            table = params[P + f"adaptive_embed/cutoff_{i}/lookup_table"]
            proj = params.get(P + f"adaptive_embed/cutoff_{i}/proj_W")
        out.append((np.float64(table), None if proj is None else np.float64(proj)))
    return out


def embed(params, cfg, tokens):
    """tokens int [q, b] -> [q, b, d] (projected, times sqrt(d_model))."""
    ends = _bins(cfg)
    out = np.zeros(tokens.shape + (cfg["d_model"],))
    for i, (table, proj) in enumerate(_embedding_params(params, cfg)):
        mask = (tokens >= ends[i]) & (tokens < ends[i + 1])
        emb = table[np.where(mask, tokens - ends[i], 0)]
        if proj is not None:
            emb = emb @ proj
        out += np.where(mask[..., None], emb, 0.0)
    return out * np.sqrt(cfg["d_model"])


def log_probs(params, cfg, hidden, cluster_order="tf"):
    """hidden [..., d] -> log-probabilities [..., V]."""
    s = P + "adaptive_softmax/"
    emb = _embedding_params(params, cfg)
    if not cfg["cutoffs"]:
        table, proj = emb[0]
        h = hidden if proj is None else hidden @ proj.T
        return _log_softmax(h @ table.T + params[s + "bias"])
    ends = _bins(cfg)
    n_clusters = len(cfg["cutoffs"])

    def logits(i, extra_w=None, extra_b=None):
        table, tied_proj = emb[i]
        proj = params.get(s + f"cutoff_{i}/proj", tied_proj)
        bias = np.float64(params[s + f"cutoff_{i}/b"])
        if extra_w is not None:
            table = np.concatenate([table, extra_w], 0)
            bias = np.concatenate([bias, extra_b], 0)
        h = hidden if proj is None else hidden @ np.float64(proj).T
        return h @ table.T + bias

    head = _log_softmax(logits(0, np.float64(params[s + "cutoff_0/cluster_W"]),
                               np.float64(params[s + "cutoff_0/cluster_b"])))
    pieces = [head[..., :ends[1]]]
    for i in range(1, n_clusters + 1):
        if cluster_order == "tf":
            column = ends[1] + i - 1
        else:  # original PyTorch: head_logprob[:, -i]
            column = ends[1] + n_clusters - i
        pieces.append(head[..., column:column + 1] + _log_softmax(logits(i)))
    return np.concatenate(pieces, -1)


def forward(params, cfg, tokens, mems, mem_len, clamp_len=-1, same_length=False,
            mask_semantics="tf", cluster_order="tf", layer_norm_epsilon=1e-12):
    """One segment.

    Args:
      params: TF1-named arrays. cfg: n_token, n_layer, d_model, n_head, d_head, div_val, cutoffs.
      tokens: int [q, b]; mems: list of L [m, b, d] (time-major).
      mask_semantics: "tf" (reference `_create_mask`) or "huggingface" (v4.30, uses mem_len).

    Returns:
      (log-probabilities [q, b, V], new mems: list of L [min(mem_len, m + q), b, d]).
    """
    n_head, d_head, d = cfg["n_head"], cfg["d_head"], cfg["d_model"]
    qlen = tokens.shape[0]
    mlen = mems[0].shape[0]
    klen = mlen + qlen
    if mask_semantics == "tf":
        mask = tf_mask(qlen, mlen, same_length)
    else:
        mask = hf_mask(qlen, mlen, mem_len, same_length)
    pos_seq = np.arange(klen - 1, -1, -1.0)
    if clamp_len > 0:
        pos_seq = np.minimum(pos_seq, clamp_len)
    inv_freq = 1.0 / 10000 ** (np.arange(0, d, 2.0) / d)
    angles = np.outer(pos_seq, inv_freq)
    pos_emb = np.concatenate([np.sin(angles), np.cos(angles)], -1)  # [k, d]
    r_w, r_r = np.float64(params[P + "r_w_bias"]), np.float64(params[P + "r_r_bias"])

    h = embed(params, cfg, tokens)
    new_mems = []
    for layer in range(cfg["n_layer"]):
        w = lambda name: np.float64(params[P + f"layer_{layer}/" + name])  # noqa: E731
        cat = np.concatenate([mems[layer], h], 0)
        new_mems.append(cat[max(0, cat.shape[0] - mem_len):])
        heads = cat @ w("rel_attn/qkv/kernel")  # [k, b, 3 n h]
        q, k, v = np.split(heads, 3, -1)
        q = q[-qlen:].reshape(qlen, -1, n_head, d_head)
        k = k.reshape(klen, -1, n_head, d_head)
        v = v.reshape(klen, -1, n_head, d_head)
        r_head = (pos_emb @ w("rel_attn/r/kernel")).reshape(klen, n_head, d_head)
        u = r_w[layer] if r_w.ndim == 3 else r_w
        vb = r_r[layer] if r_r.ndim == 3 else r_r
        ac = np.einsum("ibnd,jbnd->ijbn", q + u, k)
        bd = _rel_shift(np.einsum("ibnd,jnd->ijbn", q + vb, r_head))
        score = (ac + bd) / np.sqrt(d_head)
        m = mask[:, :, None, None]
        score = score * (1 - m) - 1e30 * m
        score = score - score.max(1, keepdims=True)
        prob = np.exp(score)
        prob /= prob.sum(1, keepdims=True)
        vec = np.einsum("ijbn,jbnd->ibnd", prob, v).reshape(qlen, -1, n_head * d_head)
        out = vec @ w("rel_attn/o/kernel")
        h = _layer_norm(h + out, w("rel_attn/LayerNorm/gamma"), w("rel_attn/LayerNorm/beta"),
                        layer_norm_epsilon)
        inner = np.maximum(h @ w("ff/layer_1/kernel") + w("ff/layer_1/bias"), 0.0)
        out = inner @ w("ff/layer_2/kernel") + w("ff/layer_2/bias")
        h = _layer_norm(h + out, w("ff/LayerNorm/gamma"), w("ff/LayerNorm/beta"),
                        layer_norm_epsilon)
    return log_probs(params, cfg, h, cluster_order), new_mems


def random_tf1_params(cfg, rng, untie_r=False, proj_same_dim=True,
                      proj_share_all_but_first=False, d_embed=None, extra_scale=0.5):
    """Random arrays under the TF1 names for `cfg` (variables present exactly as the reference
    code creates them for these flags)."""
    d, nh = cfg["d_model"], cfg["n_head"] * cfg["d_head"]
    d_embed = d_embed or d
    L, n_token, cutoffs, div_val = cfg["n_layer"], cfg["n_token"], cfg["cutoffs"], cfg["div_val"]

    def rnd(*shape, scale=extra_scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    p = {}
    bias_shape = (L, cfg["n_head"], cfg["d_head"]) if untie_r else (cfg["n_head"], cfg["d_head"])
    p[P + "r_w_bias"] = rnd(*bias_shape)
    p[P + "r_r_bias"] = rnd(*bias_shape)
    for i in range(L):
        s = P + f"layer_{i}/"
        p[s + "rel_attn/qkv/kernel"] = rnd(d, 3 * nh, scale=d ** -0.5)
        p[s + "rel_attn/r/kernel"] = rnd(d, nh, scale=d ** -0.5)
        p[s + "rel_attn/o/kernel"] = rnd(nh, d, scale=nh ** -0.5)
        for norm in ("rel_attn/LayerNorm", "ff/LayerNorm"):
            p[s + norm + "/gamma"] = 1.0 + rnd(d, scale=0.2)
            p[s + norm + "/beta"] = rnd(d, scale=0.2)
        p[s + "ff/layer_1/kernel"] = rnd(d, cfg["d_inner"], scale=d ** -0.5)
        p[s + "ff/layer_1/bias"] = rnd(cfg["d_inner"], scale=0.1)
        p[s + "ff/layer_2/kernel"] = rnd(cfg["d_inner"], d, scale=cfg["d_inner"] ** -0.5)
        p[s + "ff/layer_2/bias"] = rnd(d, scale=0.1)
    ends = [0] + list(cutoffs) + [n_token]
    e, sm = P + "adaptive_embed/", P + "adaptive_softmax/"
    widths = []
    if div_val == 1:
        p[e + "lookup_table"] = rnd(n_token, d_embed)
        if d_embed != d:
            p[e + "proj_W"] = rnd(d_embed, d, scale=d_embed ** -0.5)
        widths = [d_embed] * (len(cutoffs) + 1)
    else:
        for i in range(len(cutoffs) + 1):
            d_i = d_embed // div_val ** i
            widths.append(d_i)
            p[e + f"cutoff_{i}/lookup_table"] = rnd(ends[i + 1] - ends[i], d_i)
            if proj_same_dim or d_i != d:
                p[e + f"cutoff_{i}/proj_W"] = rnd(d_i, d, scale=d_i ** -0.5)
    if not cutoffs:
        p[sm + "bias"] = rnd(n_token, scale=0.3)
    else:
        p[sm + "cutoff_0/cluster_W"] = rnd(len(cutoffs), d_embed)
        p[sm + "cutoff_0/cluster_b"] = rnd(len(cutoffs), scale=0.3)
        for i in range(len(cutoffs) + 1):
            p[sm + f"cutoff_{i}/b"] = rnd(ends[i + 1] - ends[i], scale=0.3)
            tied = proj_share_all_but_first and i > 0
            skip = (div_val == 1 or not proj_same_dim) and widths[i] == d
            if not tied and not skip:
                p[sm + f"cutoff_{i}/proj"] = rnd(widths[i], d, scale=widths[i] ** -0.5)
    return p


def relative_error(actual, expected):
    """max |actual - expected| / max |expected| (0 when both are 0)."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    scale = np.max(np.abs(expected))
    return float(np.max(np.abs(actual - expected)) / scale) if scale else float(
        np.max(np.abs(actual)))


def pairwise_attention(layer, h, mem, u, position_score, same_length):
    """An attention sub-layer computed query by query and key by key (post-LN, no dropout):

        score(i, j) = ((q_i + u) . k_j + position_score(q_i, M + i - j)) / sqrt(H)

    over the keys j the mask lets query i see, then softmax, the values, the output
    projection, the residual and LayerNorm. The layers' own tests pass the position term of
    their encoding, computed from its formula.

    Args:
      layer: a built `RelativeMultiHeadAttention` (or subclass); its qkv, o and layer_norm
        weights are read.
      h: [B, Q, D] segment; mem: [B, M, D] memory or None.
      u: [N, H] content bias.
      position_score: (q_i [N, H], distance d >= 0) -> [N], the position term of a query
        against the key d positions back.
      same_length: every query sees M + 1 keys.

    Returns:
      float64 [B, Q, D].
    """
    w_qkv, w_o = layer.qkv.numpy(), layer.o.numpy()
    gamma, beta = layer.layer_norm.gamma.numpy(), layer.layer_norm.beta.numpy()
    bsz, qlen, _ = h.shape
    mlen = 0 if mem is None else mem.shape[1]
    cat = h if mem is None else np.concatenate([mem, h], axis=1)
    n, hd = w_o.shape[:2]
    out = np.zeros(h.shape)
    for b in range(bsz):
        attn_vec = np.zeros((qlen, n, hd))
        for i in range(qlen):
            q_i = np.einsum("d,dnh->nh", h[b, i], w_qkv[:, 0])
            visible = [j for j in range(mlen + qlen)
                       if j <= mlen + i and (not same_length or j >= i)]
            scores = np.zeros((n, len(visible)))
            for col, j in enumerate(visible):
                k_j = np.einsum("d,dnh->nh", cat[b, j], w_qkv[:, 1])
                scores[:, col] = ((q_i + u) * k_j).sum(-1) + position_score(q_i, mlen + i - j)
            scores /= np.sqrt(hd)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            for col, j in enumerate(visible):
                v_j = np.einsum("d,dnh->nh", cat[b, j], w_qkv[:, 2])
                attn_vec[i] += probs[:, col:col + 1] * v_j
        x = h[b] + np.einsum("qnh,nhd->qd", attn_vec, w_o)
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        out[b] = (x - mean) / np.sqrt(var + layer.layer_norm_epsilon) * gamma + beta
    return out
