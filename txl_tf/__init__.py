"""txl-tf: Transformer-XL (Dai et al., ACL 2019) for TensorFlow 2 / Keras 3.

Public API:
  TransformerXLConfig, TransformerXL, load_model (checkpoint="latest" | "best" | "ckpt-N"),
  choose_checkpoint, save_model and the layers
  RelativePositionalEncoding, RelativeMultiHeadAttention, PositionwiseFeedForward,
  TransformerXLBlock, AdaptiveEmbedding, AdaptiveSoftmax; functions rel_shift,
  attention_mask, update_memory.

Importing txl_tf loads TensorFlow without the lines its C++ libraries print as they load
(`txl_tf.tf_start`): import it before TensorFlow and Keras to keep them off the console.
"""
from txl_tf import tf_start

tf_start.quiet_start()  # before any module below imports TensorFlow

from txl_tf.layers.adaptive_embedding import AdaptiveEmbedding
from txl_tf.layers.adaptive_softmax import AdaptiveSoftmax
from txl_tf.layers.attention_mask import attention_mask
from txl_tf.config import ConfigError, TransformerXLConfig
from txl_tf.layers.feed_forward import PositionwiseFeedForward
from txl_tf.layers.memory import update_memory
from txl_tf.model_dir import (CheckpointChoice, ModelDirError, choose_checkpoint,
                              latest_checkpoint, load_config, load_model, restore_weights,
                              save_config, save_model)
from txl_tf.layers.positional_encoding import RelativePositionalEncoding
from txl_tf.layers.relative_attention import RelativeMultiHeadAttention, rel_shift
from txl_tf.model import TransformerXL
from txl_tf.layers.transformer_xl_block import TransformerXLBlock

__all__ = [
    "AdaptiveEmbedding", "AdaptiveSoftmax", "CheckpointChoice", "ConfigError", "ModelDirError",
    "PositionwiseFeedForward", "RelativeMultiHeadAttention", "RelativePositionalEncoding",
    "TransformerXL", "TransformerXLBlock", "TransformerXLConfig", "attention_mask",
    "choose_checkpoint", "latest_checkpoint", "load_config", "load_model", "rel_shift",
    "restore_weights", "save_config", "save_model", "update_memory",
]
__version__ = "0.1.0"
