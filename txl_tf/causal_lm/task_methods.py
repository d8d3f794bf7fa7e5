"""`CausalLMTaskMethods`: the methods of `TransformerXLCausalLM` named as keras-hub's
`CausalLM` names them (generate, save_to_preset, from_preset) and `keras.Model.export`, with the
TF Serving export under a name of its own (`export_for_serving`); `predict`, refused. Their work is done by the modules they
name; this mixin checks their arguments, before anything is written, in one line each.

Differences from keras-hub on purpose are listed in docs/keras.md ("Keras habits").

Example:
  >>> lm.compile(sampler="top_k")                       # generate()'s default sampler
  >>> lm.generate("The meaning of", max_length=30, stop_token_ids=None)
  >>> lm.export("/tmp/lm", format="tf_saved_model")     # keras.Model.export: serve(token_ids)
  >>> lm.export_for_serving("/models/txl", gen_mem_len=1600)   # runners/export.py's SavedModel
"""
import dataclasses

import keras
import tensorflow as tf

from txl_tf.causal_lm.arguments import GENERATE_RANGES, check_arguments
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.sampler import Sampler, get_sampler
from txl_tf.storage.text_files import check_utf8_path

# keras.Model.export's formats (Keras 3), and the TF Serving export's own
KERAS_FORMATS = ("tf_saved_model", "onnx", "openvino", "litert", "torch")
TF_SERVING = "tf_serving"
DEFAULT_SAMPLER = "greedy"


class CausalLMTaskMethods:
    """generate / presets / export of a model with `.backbone`, `.preprocessor` and
    `.sampler` (set by `compile(sampler=...)`)."""

    def generate(self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False, *,
                 sampler=None, seed=None, seg_len=None, mem_len=None, clamp_len=None,
                 same_length=False, jit_compile="auto"):
        """Continues prompts: strings in, strings out (ids [P] or [B, P] in, ids out; a
        `tf.data.Dataset` of either); `sampler` (default: compile()'s) and `seed` apply to this
        call only. See `txl_tf.generation.text_generation.generate`."""
        from txl_tf.generation import text_generation
        check_arguments("generate", dict(seed=seed, seg_len=seg_len, mem_len=mem_len,
                                         clamp_len=clamp_len), GENERATE_RANGES)
        chosen = getattr(self, "sampler", None) if sampler is None else sampler
        chosen = get_sampler(chosen or DEFAULT_SAMPLER, seed)
        context = text_generation.context_of(self.backbone.config, seg_len, mem_len,
                                             clamp_len, same_length)
        return text_generation.generate(self, inputs, max_length, chosen, strip_prompt,
                                        context, jit_compile, stop_token_ids)

    def predict(self, x=None, *args, **kwargs):
        """Refused: Keras's predict would read every batch from zero memory, dropping the
        context of the batches before it.

        Raises:
          CausalLMInputError: always, naming what to use instead.
        """
        raise CausalLMInputError(
            "predict() does not carry the memory from batch to batch; use evaluate() for the "
            "loss over contiguous batches, generate() for continuations, or call the model in "
            "a loop: log_probs, mems = lm(token_ids, mems, return_memory=True).")

    def save_to_preset(self, preset_dir, training_data=None):
        """Writes a preset (config.json, model.weights.h5, the preprocessor and its vocabulary,
        metadata.json); see `txl_tf.causal_lm.presets.writing.save_to_preset`."""
        from txl_tf.causal_lm.presets.writing import save_to_preset
        check_utf8_path(preset_dir, "preset_dir", CausalLMInputError)
        return save_to_preset(self, preset_dir, training_data)

    @classmethod
    def from_preset(cls, preset, checkpoint="latest", preprocessor=None, load_weights=True):
        """The causal LM of a preset or of a txl-tf model directory (`checkpoint`: latest,
        best or ckpt-N); `load_weights=False`: its config and vocabulary with fresh weights.
        See `txl_tf.causal_lm.presets.loading.load_preset`."""
        from txl_tf.causal_lm.presets.loading import load_preset
        backbone, preprocessor = load_preset(preset, checkpoint, preprocessor,
                                             load_weights=load_weights)
        return cls(backbone, preprocessor=preprocessor)

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """`keras.Model.export`: the SavedModel's `serve(token_ids int32 [B, Q])` gives the
        log-probabilities float32 [B, Q, V] from zero memory (the default input signature).
        format="tf_serving" is `export_for_serving(filepath, **kwargs)`.

        Raises:
          CausalLMInputError: an unknown format, or the TF Serving export's settings given to
            a Keras format (they belong to `export_for_serving`).
        """
        if format == TF_SERVING:
            return self.export_for_serving(filepath, **kwargs)
        if format not in KERAS_FORMATS:
            raise CausalLMInputError(
                f"unknown export format {format!r}; use one of {', '.join(KERAS_FORMATS)} "
                f"(keras.Model.export) or {TF_SERVING!r} (export_for_serving).")
        from txl_tf.causal_lm.serving_export import SETTINGS
        serving = sorted(set(kwargs) & (set(SETTINGS) | {"limits"}))
        if serving:
            raise CausalLMInputError(
                f"{', '.join(serving)} are settings of the TF Serving export; call "
                f"export_for_serving(export_dir, {serving[0]}=...) (export() is "
                "keras.Model.export).")
        check_utf8_path(filepath, "filepath", CausalLMInputError)
        if input_signature is None:
            input_signature = [tf.TensorSpec([None, None], tf.int32, name="token_ids")]
        return keras.Model.export(self, filepath, format=format, verbose=verbose,
                                  input_signature=input_signature, **kwargs)

    def export_for_serving(self, export_dir, limits=None, **settings):
        """Writes the SavedModel of runners/export.py (TF Serving: EXPORT_DIR/VERSION, its
        signatures, warmup requests and server configuration); returns export.py's dict.
        See `txl_tf.causal_lm.serving_export.export`."""
        from txl_tf.causal_lm import serving_export
        check_utf8_path(export_dir, "export_dir", CausalLMInputError)
        return serving_export.export(self, export_dir, limits, **settings)


def compile_sampler(sampler):
    """The `Sampler` of compile(sampler=...): a name, a `Sampler` or the dict of its fields
    that `get_compile_config` keeps (checked)."""
    if isinstance(sampler, dict):
        fields = [f.name for f in dataclasses.fields(Sampler)]
        unknown = sorted(set(sampler) - set(fields))
        if unknown:
            raise CausalLMInputError(f"a sampler config holds {', '.join(fields)}; "
                                     f"{', '.join(map(str, unknown))} is none of them.")
        sampler = Sampler(**sampler)
    return get_sampler(DEFAULT_SAMPLER if sampler is None else sampler)


def sampler_config(sampler) -> dict:
    """The dict of a `Sampler`'s fields (a compile config's "sampler")."""
    return dataclasses.asdict(sampler)
