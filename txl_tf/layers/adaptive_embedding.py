"""Adaptive input embedding (Baevski & Auli 2018) as in the Transformer-XL reference."""
import math

import keras
import tensorflow as tf

from txl_tf.layers.projection_weights import ProjectionWeights


@keras.saving.register_keras_serializable(package="txl_tf")
class AdaptiveEmbedding(ProjectionWeights, keras.layers.Layer):
    """Token ids -> [B, Q, d_model] embeddings, scaled by sqrt(d_model) after projection.

    Bins are [0, c1), [c1, c2), ..., [ck, n_token). Weights (reference `adaptive_embed` scope):
      div_val == 1: one table [n_token, d_embed] (`lookup_table`) and a projection
        [d_embed, d_model] (`proj_W`) only when d_embed != d_model;
      div_val > 1: per bin i a table [n_i, d_embed // div_val**i] (`cutoff_i/lookup_table`) and a
        projection [d_i, d_model] (`cutoff_i/proj_W`), omitted when d_i == d_model and not
        proj_same_dim.
    The tables and projections are reused, as the same variables, by the tied `AdaptiveSoftmax`.
    Both are `ProjectionWeights`: `quantize("int8")` keeps a table with one scale per row and a
    projection with one per output channel; `enable_lora` adapts the projections only.

    The lookup has static shapes (no boolean_mask / scatter): every bin embeds every position
    with its ids clipped into range, and a 0/1 bin mask selects the right one. Cost grows with
    the number of bins, not with the vocabulary.

    Args:
      n_token, d_embed, d_model, cutoffs, div_val, proj_same_dim: as `TransformerXLConfig`.
      embeddings_initializer, projection_initializer: initialisers of tables and projections.
      projected_bins: per bin, whether its projection is created where one is needed (None:
        every bin). False bins make a tables-only embedding whose call is no embedding: what
        a stand-alone `AdaptiveSoftmax` holds for its untied bins, which have their own.

    Call arguments:
      tokens: int [B, Q].

    Returns:
      [B, Q, d_model] in the layer's compute dtype.
    """

    def __init__(self, n_token, d_embed, d_model, cutoffs=(), div_val=1, proj_same_dim=True,
                 embeddings_initializer="uniform", projection_initializer="glorot_uniform",
                 projected_bins=None, **kwargs):
        super().__init__(**kwargs)
        self.projected_bins = None if projected_bins is None else tuple(
            bool(p) for p in projected_bins)
        self.n_token = n_token
        self.d_embed = d_embed
        self.d_model = d_model
        self.cutoffs = tuple(int(c) for c in cutoffs)
        self.div_val = div_val
        self.proj_same_dim = proj_same_dim
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.projection_initializer = keras.initializers.get(projection_initializer)
        self.cutoff_ends = (0,) + self.cutoffs + (n_token,)
        self.scale = math.sqrt(d_model)

    @property
    def n_bins(self):
        return len(self.cutoffs) + 1

    def bin_width(self, i):
        """Embedding width d_i of bin i."""
        return self.d_embed if self.div_val == 1 else self.d_embed // self.div_val ** i

    # Weights live in named attributes (not Python lists) so that tf.train.Checkpoint tracks
    # them: `lookup_table`/`proj_W` (div_val == 1) or `cutoff_{i}_lookup_table`/`_proj_W`.
    def _weight_names(self, i):
        if self.div_val == 1:
            return "lookup_table", "proj_W"
        return f"cutoff_{i}_lookup_table", f"cutoff_{i}_proj_W"

    @property
    def tables(self):
        """Embedding tables: one [n_token, d_embed] (div_val == 1) or one [n_i, d_i] per bin."""
        count = 1 if self.div_val == 1 else self.n_bins
        return [getattr(self, self._weight_names(i)[0]) for i in range(count)]

    @property
    def projections(self):
        """Projections [d_i, d_model] matching `tables`; None where a bin has none."""
        count = 1 if self.div_val == 1 else self.n_bins
        return [getattr(self, self._weight_names(i)[1]) for i in range(count)]

    def build(self, input_shape=None):
        count = 1 if self.div_val == 1 else self.n_bins
        for i in range(count):
            table_name, proj_name = self._weight_names(i)
            if self.div_val == 1:
                rows, d_i = self.n_token, self.d_embed
                needs_proj = self.d_embed != self.d_model and (
                    self.projected_bins is None or any(self.projected_bins))
            else:
                rows = self.cutoff_ends[i + 1] - self.cutoff_ends[i]
                d_i = self.bin_width(i)
                needs_proj = (self.proj_same_dim or d_i != self.d_model) and (
                    self.projected_bins is None or self.projected_bins[i])
            setattr(self, table_name, self.add_weight(
                name=table_name, shape=(rows, d_i), initializer=self.embeddings_initializer))
            setattr(self, proj_name, self.add_weight(
                name=proj_name, shape=(d_i, self.d_model),
                initializer=self.projection_initializer) if needs_proj else None)
        self.built = True

    def projection_axes(self):
        """Tables: one scale per row (axis 1 reduced); projections read d_i (axis 0)."""
        count = 1 if self.div_val == 1 else self.n_bins
        axes = {}
        for i in range(count):
            table_name, proj_name = self._weight_names(i)
            axes[table_name], axes[proj_name] = (1,), (0,)
        return axes

    def _projection_or_none(self, name, dtype=None):
        return None if getattr(self, name) is None else self.projection(name, dtype)

    def bin_weights(self, i, dtype=None):
        """(table rows of bin i [n_i, d_i], projection [d_i, d_model] or None), dequantized
        where int8 (in `dtype`, default the compute dtype)."""
        lo, hi = self.cutoff_ends[i], self.cutoff_ends[i + 1]
        if self.div_val == 1:
            return (self.projection("lookup_table", dtype, rows=(lo, hi)),
                    self._projection_or_none("proj_W", dtype))
        table_name, proj_name = self._weight_names(i)
        return (self.projection(table_name, dtype),
                self._projection_or_none(proj_name, dtype))

    def call(self, tokens):
        tokens = tf.cast(tokens, tf.int32)
        if self.div_val == 1:
            out = self.gather_rows("lookup_table", tokens)
            if self.proj_W is not None:
                out = tf.einsum("bqe,ed->bqd", out, self.projection("proj_W", out.dtype))
        else:
            out = None
            for i in range(self.n_bins):
                lo, hi = self.cutoff_ends[i], self.cutoff_ends[i + 1]
                table_name, proj_name = self._weight_names(i)
                local = tf.clip_by_value(tokens - lo, 0, hi - lo - 1)
                emb = self.gather_rows(table_name, local)
                if getattr(self, proj_name) is not None:
                    emb = tf.einsum("bqe,ed->bqd", emb, self.projection(proj_name, emb.dtype))
                in_bin = tf.logical_and(tokens >= lo, tokens < hi)
                emb = emb * tf.cast(in_bin, emb.dtype)[..., None]
                out = emb if out is None else out + emb
        return out * tf.cast(self.scale, out.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            n_token=self.n_token, d_embed=self.d_embed, d_model=self.d_model,
            cutoffs=list(self.cutoffs), div_val=self.div_val, proj_same_dim=self.proj_same_dim,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
            projection_initializer=keras.initializers.serialize(self.projection_initializer),
            projected_bins=None if self.projected_bins is None else list(self.projected_bins))
        return config
