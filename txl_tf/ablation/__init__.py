"""The paper's ablation (Table 6) at CPU scale: variants, attention-length readings, experiment.

  variants.py          the rows of Table 6 (`Variant`, `VARIANTS`, `variant_config`);
  attention_length.py  scoring a token stream at an attention length, with memory or with
                       sliding windows;
  options.py           `AblationOptions`, the experiment's own options;
  experiment.py        `run_ablation`: train every variant, evaluate, tabulate.

The names are loaded on first use (see `txl_tf/__init__.py`): the options and variants come
without TensorFlow, `run_ablation` and `format_table` import it.
"""
from txl_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "AblationOptions": "txl_tf.ablation.options",
    "DEFAULT_VARIANTS": "txl_tf.ablation.variants",
    "VARIANTS": "txl_tf.ablation.variants",
    "Variant": "txl_tf.ablation.variants",
    "VariantError": "txl_tf.ablation.variants",
    "format_table": "txl_tf.ablation.experiment",
    "run_ablation": "txl_tf.ablation.experiment",
    "select_variants": "txl_tf.ablation.variants",
    "variant_config": "txl_tf.ablation.variants",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
