"""The paper's ablation (Table 6) at CPU scale: variants, attention-length readings, experiment.

  variants.py          the rows of Table 6 (`Variant`, `VARIANTS`, `variant_config`);
  attention_length.py  scoring a token stream at an attention length, with memory or with
                       sliding windows;
  experiment.py        `run_ablation`: train every variant, evaluate, tabulate.
"""
from txl_tf.ablation.experiment import AblationOptions, format_table, run_ablation
from txl_tf.ablation.variants import (DEFAULT_VARIANTS, VARIANTS, Variant, VariantError,
                                      select_variants, variant_config)

__all__ = ["AblationOptions", "DEFAULT_VARIANTS", "VARIANTS", "Variant", "VariantError",
           "format_table", "run_ablation", "select_variants", "variant_config"]
