"""Import a source checkpoint into a `TransformerXL` and write a txl-tf model directory.

`import_tf1` and `import_huggingface` infer the configuration, build the model, assign every
variable exactly once (`assignment.assign_all`) and check that every source variable was used or
deliberately ignored (`SourceWeights.check_all_used`). `write_model_dir` saves the result with
`txl_tf.save_model` and `import.json` recording where it came from.

`import_into_model_dir(options, vocabulary)` is the whole import of runners/import_weights.py:
the weights, the checks against the shipped corpus-info.json, the vocabulary (data: an object
the runner passes in, `tf_records.vocab.released.ReleasedVocabulary`), the model directory and
an optional Keras preset.
"""
import dataclasses
import json
import os
from typing import Optional, Protocol, Sequence

from txl_tf.convert import huggingface, tf1_checkpoint
from txl_tf.convert.assignment import assign_all, model_variables
from txl_tf.convert.errors import WeightImportError, read_json_object
from txl_tf.storage.atomic_writes import write_text_atomic
from txl_tf.commands.import_weights_options import ImportOptions
from txl_tf.model.config import TransformerXLConfig
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.storage.model_files import save_model
from untrusted_files import dir_kinds
from txl_tf.storage.model_dir_layout import CHECKPOINT_STATE_FILE, IMPORT_FILE


def _build(fields, map_fn):
    if fields.get("attn_type", 0) != 0:
        raise WeightImportError(f"attn_type={fields['attn_type']}: TF1 and Hugging Face weights "
                                "carry only attn_type 0 (Transformer-XL); import without it.")
    try:
        config = TransformerXLConfig(**fields)
    except ValueError as error:
        raise WeightImportError(f"the inferred configuration is invalid: {error}") from None
    model = TransformerXL(config)
    names = set(model_variables(model))
    assign_all(model, map_fn(config, names))
    return model


def import_tf1(checkpoint, run_settings=None, corpus_cutoffs=None):
    """(model, report) from a TF1 checkpoint of the reference code."""
    source = tf1_checkpoint.read_checkpoint(checkpoint)
    fields = tf1_checkpoint.infer_config(source, run_settings, corpus_cutoffs)
    model = _build(fields, lambda config, names: tf1_checkpoint.map_weights(source, config, names))
    source.check_all_used()
    report = {"source": "tf1", "path": os.path.abspath(checkpoint),
              "ignored": source.ignored, "variables": len(source.names)}
    return model, report


def import_huggingface(input_dir, run_settings=None, cluster_order="tf",
                       same_length_semantics="paper"):
    """(model, report) from a Hugging Face TransfoXL directory."""
    hf = huggingface.read_config(input_dir)
    source, weight_file = huggingface.read_weights(input_dir)
    fields = huggingface.infer_config(hf, run_settings, same_length_semantics)
    model = _build(fields, lambda config, names: huggingface.map_weights(
        source, hf, config, names, cluster_order=cluster_order))
    source.check_all_used()
    report = {"source": "huggingface", "path": os.path.abspath(input_dir),
              "weight_file": weight_file, "cluster_order": cluster_order,
              "same_length_semantics": same_length_semantics, "ignored": source.ignored,
              "variables": len(source.names)}
    return model, report


def check_new_model_dir(model_dir):
    """Raises `WeightImportError` when `model_dir` already holds a checkpoint, or is a
    directory of another kind (data, preset, export)."""
    dir_kinds.check_kind(model_dir, dir_kinds.MODEL, f"model_dir {model_dir}",
                         WeightImportError)
    _check_no_checkpoint(model_dir)


def _check_no_checkpoint(model_dir):
    if os.path.exists(os.path.join(model_dir, CHECKPOINT_STATE_FILE)):
        raise WeightImportError(f"{model_dir} already holds a checkpoint; import into a new "
                                "directory so that load_model cannot pick up another model.")


def write_model_dir(model, model_dir, report):
    """Save `model` (config.json + checkpoint) and import.json (`report` and the checkpoint).

    Returns:
      The checkpoint path.
    """
    _check_no_checkpoint(model_dir)  # its vocabulary is written by now
    path = save_model(model, model_dir)
    info = dict(report, checkpoint=os.path.basename(path))
    write_text_atomic(os.path.join(model_dir, IMPORT_FILE),
                      json.dumps(info, indent=2, sort_keys=True) + "\n")
    return path


class ImportedVocabulary(Protocol):
    """What `import_into_model_dir` needs of the vocabulary shipped with the weights."""

    def write(self, model_dir: str, dataset: Optional[str], cutoffs: Sequence[int],
              n_token: int) -> dict:
        """Writes the model directory's vocab.txt and corpus-info.json."""


@dataclasses.dataclass
class Imported:
    """What `import_into_model_dir` wrote: the model, the source report (import.json), the
    checkpoint path and the preset directory (None without --preset_dir)."""
    model: TransformerXL
    report: dict
    checkpoint: str
    preset: Optional[str] = None


def import_into_model_dir(options: ImportOptions,
                          vocabulary: Optional[ImportedVocabulary] = None) -> Imported:
    """Imports `options.source`'s weights and writes `options.model_dir` (and the preset).

    Raises:
      WeightImportError: unreadable or foreign weights, a corpus-info.json that does not match
        them, a model directory that already holds a checkpoint.
    """
    corpus = read_json_object(options.corpus_info, f"--corpus_info={options.corpus_info}",
                              "the corpus-info.json shipped with the weights"
                              ) if options.corpus_info else {}
    if options.source == "tf1":
        model, report = import_tf1(options.checkpoint, options.run_settings(),
                                   corpus.get("cutoffs"))
    else:
        model, report = import_huggingface(options.input_dir, options.run_settings(),
                                           options.cluster_order, options.same_length_semantics)
    c = model.config
    if corpus.get("vocab_size") not in (None, c.n_token):
        raise WeightImportError(f"--corpus_info vocab_size {corpus['vocab_size']} differs "
                                f"from the checkpoint's n_token {c.n_token}.")
    check_new_model_dir(options.model_dir)  # before the vocabulary is written
    if vocabulary is not None:
        vocabulary.write(options.model_dir, options.dataset or corpus.get("dataset"),
                         c.cutoffs, c.n_token)
    imported = Imported(model, report, write_model_dir(model, options.model_dir, report))
    if options.preset_dir:
        from txl_tf.causal_lm.presets.from_model_dir import preset_from_model_dir
        imported.preset = preset_from_model_dir(options.model_dir, options.preset_dir)
    return imported
