"""The paper's ablation (Table 6) at CPU scale: its variants and attention-length readings.

  variants.py          the rows of Table 6 (`Variant`, `VARIANTS`, `variant_config`);
  attention_length.py  scoring a token stream at an attention length, with memory or with
                       sliding windows.

The experiment itself (`AblationOptions`, `run_ablation`) is a command:
`txl_tf/commands/ablation.py`. The names are loaded on first use (see `txl_tf/__init__.py`):
the variants come without TensorFlow.
"""
from txl_tf.runtime.lazy_exports import lazy_exports

_EXPORTS = {
    "DEFAULT_VARIANTS": "txl_tf.ablation.variants",
    "VARIANTS": "txl_tf.ablation.variants",
    "Variant": "txl_tf.ablation.variants",
    "VariantError": "txl_tf.ablation.variants",
    "select_variants": "txl_tf.ablation.variants",
    "variant_config": "txl_tf.ablation.variants",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
