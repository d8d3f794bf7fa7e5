"""Adaptive softmax (Grave et al. 2017) with weights tied to `AdaptiveEmbedding`.

Exact for every token: nothing is sampled, no token is dropped, probabilities sum to one.
`txl_tf.model.config.auto_cutoffs` chooses the bins for a vocabulary size (the model flags'
`--cutoffs=auto` when the corpus records none).
"""
import keras
import tensorflow as tf

from txl_tf.layers.adaptive_embedding import AdaptiveEmbedding
from txl_tf.layers.projection_weights import ProjectionWeights


def _project_logits(hidden, weight, bias, proj):
    """logits = (hidden @ proj^T) @ weight^T + bias.

    hidden [B, Q, D]; weight [n, d_i]; bias [n]; proj [d_i, D] or None (d_i == D).
    Returns [B, Q, n].
    """
    if proj is not None:
        hidden = tf.einsum("bqd,ed->bqe", hidden, proj)
    return tf.einsum("bqe,ne->bqn", hidden, weight) + bias


@keras.saving.register_keras_serializable(package="txl_tf")
class AdaptiveSoftmax(ProjectionWeights, keras.layers.Layer):
    """Log-probabilities or per-token NLL over the vocabulary, in float32.

    With no cutoffs it is a plain softmax over the tied table plus a bias [n_token] (reference
    `adaptive_softmax/bias`). With cutoffs c1 < ... < ck the head scores the shortlist
    [0, c1) plus one cluster logit per tail bin; a token t of tail bin i >= 1 gets
      log p(t) = log_softmax(head)[c1 + i - 1] + log_softmax(tail_i)[t - c_i]
    (cluster row i-1 belongs to tail bin i: the reference TF order).

    Own weights (reference `adaptive_softmax` scope): per bin a bias `cutoff_i/b` [n_i]; in bin
    0 `cluster_W` [k, d_embed] and `cluster_b` [k] (zeros at start); per bin an output projection
    `cutoff_i/proj` [d_i, D] unless it is tied (`tie_projs[i]`, then the embedding's projection
    of that bin is used) or not needed ((div_val == 1 or not proj_same_dim) and d_i == D).

    Args:
      n_token, d_embed, d_model, cutoffs, div_val, proj_same_dim: as `TransformerXLConfig`.
      tie_projs: per bin, reuse the embedding projection (default: none).
      embedding: the `AdaptiveEmbedding` whose tables (and tied projections) this layer uses.
        None creates a private one (a stand-alone softmax; what `from_config` gives) that
        holds projections only for the tied bins, so that every weight is used.
      **kwargs: Keras layer arguments. The dtype policy is always float32: a mixed policy,
        given or global, is replaced, and the log-probabilities stay float32.
      projection_initializer, embeddings_initializer: for untied projections / private tables.
      tail_chunk: how many tail-bin positions the NLL path scores at once (None: a quarter of
        the batch's positions). Any value gives the same, exact result; it trades memory for
        loop iterations.

    Call arguments:
      hidden: [B, Q, D] final hidden states.
      labels: int [B, Q] or None. Negative labels mark padding: their NLL is 0.

    Returns:
      labels given: float32 [B, Q] negative log-likelihood in nats;
      otherwise: float32 [B, Q, n_token] log-probabilities.
    """

    def __init__(self, n_token, d_embed, d_model, cutoffs=(), div_val=1, proj_same_dim=True,
                 tie_projs=None, embedding=None, projection_initializer="glorot_uniform",
                 embeddings_initializer="uniform", tail_chunk=None, **kwargs):
        kwargs["dtype"] = "float32"  # always float32, whatever policy is given or global
        super().__init__(**kwargs)
        self.n_token = n_token
        self.d_embed = d_embed
        self.d_model = d_model
        self.cutoffs = tuple(int(c) for c in cutoffs)
        self.div_val = div_val
        self.proj_same_dim = proj_same_dim
        n_bins = len(self.cutoffs) + 1
        self.tie_projs = tuple(bool(t) for t in (tie_projs or (False,) * n_bins))
        if len(self.tie_projs) != n_bins:
            raise ValueError(f"tie_projs needs {n_bins} entries (one per bin), got "
                             f"{list(self.tie_projs)}")
        self.projection_initializer = keras.initializers.get(projection_initializer)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.cutoff_ends = (0,) + self.cutoffs + (n_token,)
        self.tail_chunk = tail_chunk
        if embedding is None:
            self.private_embedding = AdaptiveEmbedding(
                n_token, d_embed, d_model, cutoffs=self.cutoffs, div_val=div_val,
                proj_same_dim=proj_same_dim, embeddings_initializer=embeddings_initializer,
                projection_initializer=projection_initializer, projected_bins=self.tie_projs,
                name="embedding")
            embedding = self.private_embedding
        # Not tracked here: the owner of a tied embedding tracks (and checkpoints) it once.
        object.__setattr__(self, "_embedding", embedding)

    @property
    def embedding(self):
        return self._embedding

    @property
    def n_clusters(self):
        return len(self.cutoffs)

    def build(self, input_shape=None):
        # Weights live in named attributes (not Python lists) so that tf.train.Checkpoint
        # tracks them: `bias` (no cutoffs) or `cutoff_{i}_b`, `cutoff_{i}_proj`, `cluster_W`,
        # `cluster_b`.
        if not self._embedding.built:
            self._embedding.build()
        if not self.cutoffs:
            self.bias = self.add_weight(name="bias", shape=(self.n_token,), initializer="zeros")
        else:
            for i in range(self.n_clusters + 1):
                lo, hi = self.cutoff_ends[i], self.cutoff_ends[i + 1]
                setattr(self, f"cutoff_{i}_b", self.add_weight(
                    name=f"cutoff_{i}_b", shape=(hi - lo,), initializer="zeros"))
                d_i = self._embedding.bin_width(i)
                skip = (self.div_val == 1 or not self.proj_same_dim) and d_i == self.d_model
                setattr(self, f"cutoff_{i}_proj", None if self.tie_projs[i] or skip else
                        self.add_weight(name=f"cutoff_{i}_proj", shape=(d_i, self.d_model),
                                        initializer=self.projection_initializer))
            self.cluster_W = self.add_weight(
                name="cluster_W", shape=(self.n_clusters, self.d_embed), initializer="zeros")
            self.cluster_b = self.add_weight(name="cluster_b", shape=(self.n_clusters,),
                                             initializer="zeros")
        self.built = True

    @property
    def biases(self):
        """Output biases: [bias [n_token]] or one [n_i] per bin."""
        if not self.cutoffs:
            return [self.bias]
        return [getattr(self, f"cutoff_{i}_b") for i in range(self.n_clusters + 1)]

    @property
    def out_projections(self):
        """Untied output projections [d_i, D] per bin (None where tied or not needed)."""
        if not self.cutoffs:
            return [None]
        return [getattr(self, f"cutoff_{i}_proj") for i in range(self.n_clusters + 1)]

    def projection_axes(self):
        """Its untied output projections cutoff_i_proj [d_i, D] (one scale per row d_i). The
        tied tables and projections are the embedding's, quantized with it."""
        return {f"cutoff_{i}_proj": (1,) for i in range(self.n_clusters + 1)} if self.cutoffs \
            else {}

    def bin_projection(self, i):
        """Output projection [d_i, D] of bin i (float32, dequantized where int8), or None
        when the bin needs none."""
        if not self.cutoffs:
            return self._embedding.bin_weights(0, tf.float32)[1]
        if self.tie_projs[i]:
            return self._embedding.bin_weights(i, tf.float32)[1]
        if getattr(self, f"cutoff_{i}_proj") is None:
            return None
        return self.projection(f"cutoff_{i}_proj", tf.float32)

    def _head_logits(self, hidden):
        weight, _ = self._embedding.bin_weights(0, tf.float32)
        if self.cutoffs:
            weight = tf.concat([weight, self.cluster_W], axis=0)
            bias = tf.concat([self.cutoff_0_b, self.cluster_b], axis=0)
        else:
            bias = self.bias
        return _project_logits(hidden, weight, bias, self.bin_projection(0))

    def _tail_logits(self, hidden, i):
        weight, _ = self._embedding.bin_weights(i, tf.float32)
        return _project_logits(hidden, weight, getattr(self, f"cutoff_{i}_b"),
                               self.bin_projection(i))

    def call(self, hidden, labels=None):
        hidden = tf.cast(hidden, tf.float32)
        head_logits = tf.cast(self._head_logits(hidden), tf.float32)
        if labels is not None:
            labels = tf.cast(labels, tf.int32)
            padding = labels < 0
            nll = self._nll(hidden, head_logits, tf.maximum(labels, 0))
            return tf.where(padding, tf.zeros_like(nll), nll)
        head_logprob = tf.nn.log_softmax(head_logits, axis=-1)
        if not self.cutoffs:
            return head_logprob
        c1 = self.cutoffs[0]
        pieces = [head_logprob[..., :c1]]
        for i in range(1, self.n_clusters + 1):
            tail = tf.nn.log_softmax(tf.cast(self._tail_logits(hidden, i), tf.float32), axis=-1)
            pieces.append(tail + head_logprob[..., c1 + i - 1:c1 + i])
        return tf.concat(pieces, axis=-1)

    def _nll(self, hidden, head_logits, labels):
        if not self.cutoffs:
            return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, head_logits)
        c1 = self.cutoffs[0]
        bin_index = tf.zeros_like(labels)
        for c in self.cutoffs:
            bin_index += tf.cast(labels >= c, tf.int32)
        head_target = tf.where(bin_index == 0, labels, c1 + bin_index - 1)
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(head_target, head_logits)
        flat_hidden = tf.reshape(hidden, [-1, self.d_model])  # [N, D], N = B * Q
        flat_labels = tf.reshape(labels, [-1])
        flat_bins = tf.reshape(bin_index, [-1])
        tail_nll = tf.zeros_like(flat_labels, dtype=tf.float32)
        for i in range(1, self.n_clusters + 1):
            tail_nll += self._tail_nll(flat_hidden, flat_labels, flat_bins, i)
        return nll + tf.reshape(tail_nll, tf.shape(labels))

    def _tail_nll(self, hidden, labels, bins, i):
        """-log_softmax(tail_i)[label - c_i] at the positions whose label is in bin i, 0 elsewhere.

        Only those positions are scored: they are moved to the front (a stable sort on the bin
        mask) and processed `tail_chunk` at a time in a bounded `tf.while_loop`, so shapes stay
        static for XLA, the cost follows the number of tail tokens rather than B * Q, and no
        token is ever dropped (the loop runs until every tail token of the batch is scored).

        hidden [N, D]; labels, bins int [N]. Returns float32 [N].
        """
        lo, hi = self.cutoff_ends[i], self.cutoff_ends[i + 1]
        n = tf.shape(labels)[0]
        in_bin = bins == i
        count = tf.reduce_sum(tf.cast(in_bin, tf.int32))
        order = tf.argsort(tf.cast(tf.logical_not(in_bin), tf.int32), stable=True)
        chunk = self.tail_chunk if self.tail_chunk else tf.maximum((n + 3) // 4, 1)
        chunk = tf.minimum(chunk, tf.maximum(n, 1))
        max_chunks = (n + chunk - 1) // chunk

        def body(k, total):
            slots = k * chunk + tf.range(chunk)
            valid = slots < count
            positions = tf.gather(order, tf.minimum(slots, n - 1))
            logits = tf.cast(self._tail_logits(tf.gather(hidden, positions)[None], i)[0],
                             tf.float32)  # [chunk, n_i]
            local = tf.clip_by_value(tf.gather(labels, positions) - lo, 0, hi - lo - 1)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(local, logits)
            losses = tf.where(valid, losses, tf.zeros_like(losses))
            total = tf.tensor_scatter_nd_add(total, positions[:, None], losses)
            return k + 1, total

        _, total = tf.while_loop(
            lambda k, total: k * chunk < count, body,
            (tf.constant(0), tf.zeros([n], tf.float32)), maximum_iterations=max_chunks)
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            n_token=self.n_token, d_embed=self.d_embed, d_model=self.d_model,
            cutoffs=list(self.cutoffs), div_val=self.div_val, proj_same_dim=self.proj_same_dim,
            tie_projs=list(self.tie_projs),
            projection_initializer=keras.initializers.serialize(self.projection_initializer),
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
            tail_chunk=self.tail_chunk)
        return config
