"""`quantize` and `enable_lora` of `TransformerXLCausalLM`: the backbone's, then the causal LM's
traced steps and kept generators dropped (they read the variables they were traced with)."""
from txl_tf.generation import text_generation


class BackboneAdaptation:
    """Mixin of `TransformerXLCausalLM` (`self.backbone`, `compile` settings)."""

    def _retrace(self):
        self.train_function = self.test_function = self.predict_function = None
        text_generation.forget_generators(self.backbone)
        if getattr(self, "_replica_step", None) is not None:
            self.compile_from_config(self.get_compile_config())  # a new optimizer and steps

    def quantize(self, mode=None, config=None, **kwargs):
        """int8 over every projection of the backbone (`TransformerXL.quantize`)."""
        self.backbone.quantize(mode, config, **kwargs)
        self._retrace()

    def enable_lora(self, rank, target_names=None, lora_alpha=None):
        """LoRA adapters on the backbone (`TransformerXL.enable_lora`; default targets: the
        attention's qkv and o), everything else frozen, so `fit` trains the adapters only.
        Returns the paths of the weights adapted."""
        adapted = self.backbone.enable_lora(rank, target_names, lora_alpha)
        self._retrace()
        return adapted
