"""`TransformerXL`: the language model, with memory as explicit state.

Size glossary: B batch, Q segment length, M memory length, K = M + Q, D d_model, V n_token,
L n_layer. Every tensor is batch-major.

The memory is never stored in the model. A call takes the memory of the previous segment
(`mems`, one [B, M, D] tensor per layer, or None for none) and returns the new one, so the
caller (a training loop's per-replica state, a serving client, a generator) owns it.
"""
import keras
import tensorflow as tf

from txl_tf.layers.absolute_position_embedding import LearnedPositionEmbedding
from txl_tf.layers.adaptive_embedding import AdaptiveEmbedding
from txl_tf.layers.adaptive_softmax import AdaptiveSoftmax
from txl_tf.layers.attention_mask import attention_mask
from txl_tf.model.config import ConfigError, TransformerXLConfig
from txl_tf.model.memory_estimate import check_weights_fit
from txl_tf.model.position_inputs import (add_input_sinusoids, add_layer_embedding, layer_biases,
                                          relative_sinusoids)
from txl_tf.layers.dropout import ReplicaDropout
from txl_tf.layers.initializers import main_initializer, projection_initializer
from txl_tf.layers.memory import update_memory
from txl_tf.layers.positional_encoding import RelativePositionalEncoding
from txl_tf.layers.transformer_xl_block import TransformerXLBlock


@keras.saving.register_keras_serializable(package="txl_tf")
class TransformerXL(keras.Model):
    """Transformer-XL language model (Dai et al., 2019), reference TF semantics.

    `config.attention_variant` chooses the position encoding of the paper's ablation (Table 6),
    with the reference PyTorch semantics: one record of `txl_tf/model/attention_variants.py`. Every
    block builds the attention layer the record names; the model builds and feeds the
    mechanisms the record marks (relative sinusoids with u/v biases, learned relative tables,
    input sinusoids, per-layer embeddings), each working with memory and without. What each
    feeds, and how the absolute ones read the memory (temporal confusion), is
    `txl_tf/model/position_inputs.py`.

    Args:
      config: a `TransformerXLConfig`.

    Call arguments:
      tokens: int [B, Q] input ids.
      mems: list of L float tensors [B, M, D] (the previous call's "mems" or `init_mems`), or
        None for no memory at all. M may differ from mem_len.
      labels: int [B, Q] targets, or None. A negative label marks padding (e.g. the end of a
        stream): its NLL is 0, so sum(nll) / count(labels >= 0) stays exact.
      training: dropout on/off.
      mem_len, clamp_len, same_length: override the config's run settings for this call
        (e.g. a longer memory at evaluation). Python values, not tensors.
      mem_valid: None (every memory position holds a state), or int32 [] in [0, M]: a fixed-size
        memory (`txl_tf/layers/memory.py`) whose states fill only its last mem_valid positions.
        The unfilled ones are masked out of the attention (`attention_mask`); the filled ones
        keep the key positions, hence the relative distances and the absolute positions, that
        they have in a memory of mem_valid states, so the output equals that of
        `mems[i][:, M - mem_valid:]` without mem_valid.
      segment_padding: None, or int32 [] in [0, Q): the last segment_padding tokens are padding
        (a static-shape segment longer than the tokens it holds). No real token attends to them
        (the causal mask), and the absolute positions count back from the last real token, so
        the outputs of the real tokens equal those of the call on `tokens[:, :Q -
        segment_padding]`; the returned "mems" include the padding
        (`txl_tf.layers.memory.fixed_memory_update` drops it).

    Returns:
      dict with
        "mems": list of L float32 [B, min(mem_len, M + Q), D], the input of each layer for the
          last positions, under stop-gradient;
        "nll": float32 [B, Q] per-token negative log-likelihood in nats (labels given), or
        "log_probs": float32 [B, Q, V] (no labels).

    Example:
      >>> config = TransformerXLConfig(n_token=32, n_layer=2, d_model=16, n_head=2, d_head=8,
      ...                              d_inner=32, tgt_len=8, mem_len=8)
      >>> model = TransformerXL(config)
      >>> mems = model.init_mems(batch_size=4)
      >>> out = model(tf.zeros([4, 8], tf.int32), mems=mems, labels=tf.ones([4, 8], tf.int32))
      >>> out["nll"].shape, len(out["mems"]), out["mems"][0].shape
      (TensorShape([4, 8]), 2, TensorShape([4, 8, 16]))
    """

    def __init__(self, config: TransformerXLConfig, **kwargs):
        if isinstance(config, dict):
            config = TransformerXLConfig.from_dict(config)
        if not isinstance(config, TransformerXLConfig):
            raise ConfigError(f"TransformerXL takes a TransformerXLConfig (or its dict), got "
                              f"{type(config).__name__}.")
        check_weights_fit(config)  # before any variable: sizes no machine here can hold
        super().__init__(**kwargs)
        self.config = config
        c = config
        init = main_initializer(c.init, c.init_std, c.init_range)
        proj_init = projection_initializer(c.init, c.proj_init_std, c.init_range)
        self.variant = variant = c.attention_variant
        self.relative = variant.relative_sinusoids
        self.embedding = AdaptiveEmbedding(
            c.n_token, c.d_embed, c.d_model, cutoffs=c.cutoffs, div_val=c.div_val,
            proj_same_dim=c.proj_same_dim, embeddings_initializer=init,
            projection_initializer=proj_init, dtype=self.dtype_policy, name="adaptive_embed")
        self.positional_encoding = RelativePositionalEncoding(c.d_model, dtype="float32",
                                                              name="pos_emb")
        # Blocks are attributes layer_0 .. layer_{L-1} (tracked by tf.train.Checkpoint, unlike a
        # Python list); `blocks` lists them.
        for i in range(c.n_layer):
            setattr(self, f"layer_{i}", TransformerXLBlock(
                c.d_model, c.n_head, c.d_head, c.d_inner, dropout=c.dropout, dropatt=c.dropatt,
                pre_lnorm=c.pre_lnorm, layer_norm_epsilon=c.layer_norm_epsilon,
                kernel_initializer=init, attention=variant.attention,
                attention_options=variant.attention_options(c),
                dtype=self.dtype_policy, name=f"layer_{i}"))
            if variant.layer_embeddings:
                setattr(self, f"pos_emb_{i}", LearnedPositionEmbedding(
                    c.max_klen, c.d_model, embeddings_initializer=init,
                    dtype=self.dtype_policy, name=f"pos_emb_{i}"))
        self.softmax = AdaptiveSoftmax(
            c.n_token, c.d_embed, c.d_model, cutoffs=c.cutoffs, div_val=c.div_val,
            proj_same_dim=c.proj_same_dim, tie_projs=c.tie_projs, embedding=self.embedding,
            projection_initializer=proj_init, name="adaptive_softmax")
        self.dropout = ReplicaDropout(c.dropout, dtype=self.dtype_policy)
        self._bias_initializer = init
        self.build()

    def build(self, input_shape=None):
        c = self.config
        self.embedding.build()
        for block in self.blocks:
            block.build()
        for embedding in self.absolute_embeddings:
            embedding.build()
        self.softmax.build()
        if self.relative:
            shape = (c.n_layer, c.n_head, c.d_head) if c.untie_r else (c.n_head, c.d_head)
            self.r_w_bias = self.add_weight(name="r_w_bias", shape=shape,
                                            initializer=self._bias_initializer)
            self.r_r_bias = self.add_weight(name="r_r_bias", shape=shape,
                                            initializer=self._bias_initializer)
        self.built = True

    @property
    def blocks(self):
        """The L `TransformerXLBlock`s, bottom first."""
        return [getattr(self, f"layer_{i}") for i in range(self.config.n_layer)]

    @property
    def absolute_embeddings(self):
        """The L `LearnedPositionEmbedding`s of a variant with `layer_embeddings`, bottom first
        ([] otherwise)."""
        if not self.variant.layer_embeddings:
            return []
        return [getattr(self, f"pos_emb_{i}") for i in range(self.config.n_layer)]

    @property
    def absolute_positions(self) -> bool:
        """True for the absolute encodings (`AttentionVariant.absolute_positions`): positions
        count back from the newest key of a call, so a token is read differently when more
        tokens follow it in its segment, and a prefix of a segment is not read as it would be
        alone."""
        return self.variant.absolute_positions

    # ------------------------------------------------------------------------------------------
    def init_mems(self, batch_size, mem_len=None):
        """L zero memories float32 [batch_size, mem_len, D]: zeros that are attended to, as the
        reference TF code starts every stream."""
        mem_len = self.config.mem_len if mem_len is None else mem_len
        return [tf.zeros([batch_size, mem_len, self.config.d_model], tf.float32)
                for _ in range(self.config.n_layer)]

    def call(self, tokens, mems=None, labels=None, training=False, mem_len=None,
             clamp_len=None, same_length=None, mem_valid=None, segment_padding=None):
        c = self.config
        mem_len = c.mem_len if mem_len is None else mem_len
        clamp_len = c.clamp_len if clamp_len is None else clamp_len
        same_length = c.same_length if same_length is None else same_length
        if mems is not None and len(mems) != c.n_layer:
            raise ValueError(f"mems must hold one tensor per layer ({c.n_layer}), got "
                             f"{len(mems)}; start from model.init_mems(batch_size) or None.")

        tokens = tf.convert_to_tensor(tokens)
        qlen = tf.shape(tokens)[1]
        mlen = 0 if mems is None else tf.shape(mems[0])[1]
        klen = mlen + qlen

        if mems is None:
            mem_valid = None
        allowed = attention_mask(qlen, mlen, same_length, mem_valid)  # [Q, K]
        padding = 0 if segment_padding is None else segment_padding
        h, pos_emb, mem_positions = self._first_input(tokens, mlen, klen, clamp_len, training,
                                                      padding)
        new_mems = []
        absolute_embeddings = self.absolute_embeddings
        for i, block in enumerate(self.blocks):
            mem = None if mems is None else mems[i]
            new_mems.append(update_memory(mem, h, mem_len))
            if i == 0 and mem is not None and mem_positions is not None:
                mem = tf.cast(mem, tf.float32) + mem_positions
            u = v = None
            if self.relative:
                u, v = layer_biases(self.r_w_bias, self.r_r_bias, i, c.untie_r)
            if absolute_embeddings:
                h, mem = add_layer_embedding(absolute_embeddings[i], h, mem, mlen, klen, padding)
            h = block(h, mem=mem, pos_emb=pos_emb, r_w_bias=u, r_r_bias=v, allowed=allowed,
                      training=training, clamp_len=clamp_len)
        h = self.dropout(h, training=training)

        out = {"mems": new_mems}
        if labels is not None:
            out["nll"] = self.softmax(h, labels=labels)
        else:
            out["log_probs"] = self.softmax(h)
        return out

    def _first_input(self, tokens, mlen, klen, clamp_len, training, padding=0):
        """(input of layer 0 [B, Q, D], relative sinusoids [K, D] (`relative_sinusoids`) or None,
        float32 sinusoids [M, D] to add to the layer-0 memory (`input_sinusoids`) or None).
        `padding`: trailing padding tokens, not counted by the absolute positions."""
        word_emb = self.embedding(tokens)  # [B, Q, D]
        pos_emb = mem_positions = None
        if self.relative:
            pos_emb = self.dropout(relative_sinusoids(self.positional_encoding, klen, clamp_len,
                                                      self.compute_dtype), training=training)
        if self.variant.input_sinusoids:
            word_emb, mem_positions = add_input_sinusoids(word_emb, self.positional_encoding,
                                                          mlen, klen, clamp_len, padding)
        return self.dropout(word_emb, training=training), pos_emb, mem_positions

    # ------------------------------------------------------------------------------------------
    def quantize(self, mode=None, config=None, **kwargs):
        """int8 over every projection (attention, feed-forward, embedding and softmax); see
        `txl_tf.model.quantization.quantize_model` (`quantized_share` says what it covered)."""
        from txl_tf.model.quantization import quantize_model
        quantize_model(self, mode, config, **kwargs)

    def enable_lora(self, rank, target_names=None, lora_alpha=None):
        """Freezes the model and adds LoRA adapters (default targets: the attention's qkv and
        o); see `txl_tf.model.lora.enable_lora_on`. Returns the paths of the weights adapted."""
        from txl_tf.model.lora import enable_lora_on
        return enable_lora_on(self, rank, target_names, lora_alpha)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(TransformerXLConfig.from_dict(config.pop("config")), **config)
