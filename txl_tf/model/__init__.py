"""The model: the network, its configuration, the ablation's variants and what a step costs.

  transformer_xl     TransformerXL: the language model, with memory as explicit state
  position_inputs    the positions it feeds its blocks, by attention variant
  config             TransformerXLConfig: every hyperparameter of the reference, validated
  context_settings   ContextSettings: tgt_len, mem_len, clamp_len, same_length as one value
  config_template    ConfigTemplate: a configuration whose vocabulary is the data's
  attention_variants one record per attention mechanism (Table 6), naming the layer it builds
  flops              model FLOPs of a step, from the configuration (MFU, duration estimate)
  memory_estimate    a lower bound of a step's memory, to refuse impossible sizes
  data_interfaces    what the model's commands need of a vocabulary and of text (Protocols)

The layers the model stacks are in `txl_tf/layers/`. Everything here but `transformer_xl` and
`position_inputs` imports no TensorFlow, so `TransformerXL` is loaded on first use (PEP 562).
"""
from txl_tf.runtime.lazy_exports import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "ConfigError": "txl_tf.model.config",
    "ContextSettings": "txl_tf.model.context_settings",
    "TransformerXLConfig": "txl_tf.model.config",
    "TransformerXL": "txl_tf.model.transformer_xl",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
