"""txl-tf: Transformer-XL (Dai et al., ACL 2019) for TensorFlow 2 / Keras 3.

Public API:
  TransformerXLConfig, TransformerXL, TransformerXLCausalLM (a keras.Model whose fit() carries
  the memory), load_model (checkpoint="latest" | "best" | "ckpt-N"),
  choose_checkpoint, save_model and the layers
  RelativePositionalEncoding, RelativeMultiHeadAttention, PositionwiseFeedForward,
  TransformerXLBlock, AdaptiveEmbedding, AdaptiveSoftmax; functions rel_shift,
  attention_mask, update_memory.

The names are loaded on first use (PEP 562): `import txl_tf` and the TensorFlow-free modules
(`txl_tf.model.config`, the option dataclasses) do not import TensorFlow, so that a runner's
`--help` and its usage errors come at once; `txl_tf.TransformerXL` (or any layer) imports it.
Whoever imports TensorFlow first after `import txl_tf` (txl_tf, Keras or the user) loads it without
the lines its C++ libraries print as they load (`txl_tf.runtime.tf_start`): import txl_tf first.
"""
from txl_tf.runtime import tf_start
from txl_tf.runtime.lazy_exports import lazy_exports
from txl_tf.runtime.version import __version__  # noqa: F401  (public)

# public name -> the module that defines it
_EXPORTS = {
    "AdaptiveEmbedding": "txl_tf.layers.adaptive_embedding",
    "AdaptiveSoftmax": "txl_tf.layers.adaptive_softmax",
    "attention_mask": "txl_tf.layers.attention_mask",
    "ConfigError": "txl_tf.model.config",
    "TransformerXLConfig": "txl_tf.model.config",
    "PositionwiseFeedForward": "txl_tf.layers.feed_forward",
    "update_memory": "txl_tf.layers.memory",
    "CheckpointChoice": "txl_tf.storage.model_files",
    "choose_checkpoint": "txl_tf.storage.model_files",
    "ModelDirError": "txl_tf.storage.model_files",
    "latest_checkpoint": "txl_tf.storage.model_files",
    "load_config": "txl_tf.storage.model_files",
    "load_model": "txl_tf.storage.model_files",
    "restore_weights": "txl_tf.storage.model_files",
    "save_config": "txl_tf.storage.model_files",
    "save_model": "txl_tf.storage.model_files",
    "RelativePositionalEncoding": "txl_tf.layers.positional_encoding",
    "RelativeMultiHeadAttention": "txl_tf.layers.relative_attention",
    "rel_shift": "txl_tf.layers.relative_attention",
    "TransformerXL": "txl_tf.model.transformer_xl",
    "TransformerXLBlock": "txl_tf.layers.transformer_xl_block",
    "TransformerXLCausalLM": "txl_tf.causal_lm.causal_lm",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
tf_start.quiet_when_imported()  # loads nothing; TensorFlow's first import, by anyone, is quiet
