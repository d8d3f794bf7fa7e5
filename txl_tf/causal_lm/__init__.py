"""Transformer-XL as a Keras causal language model (`TransformerXLCausalLM`): `fit()` with the
memory carried from batch to batch, and the callbacks and checks it needs.

The names are loaded on first use (see `txl_tf/__init__.py`).
"""
from txl_tf.runtime.lazy_exports import lazy_exports

_EXPORTS = {
    "ContiguousBatchError": "txl_tf.causal_lm.contiguous_batches",
    "ReplicaMemory": "txl_tf.causal_lm.replica_memory",
    "ResetMemoryAtEpochStart": "txl_tf.causal_lm.memory_callbacks",
    "TransformerXLCausalLM": "txl_tf.causal_lm.causal_lm",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
