"""Import a source checkpoint into a `TransformerXL` and write a txl-tf model directory.

`import_tf1` and `import_huggingface` infer the configuration, build the model, assign every
variable exactly once (`assignment.assign_all`) and check that every source variable was used or
deliberately ignored (`SourceWeights.check_all_used`). `write_model_dir` saves the result with
`txl_tf.save_model` and `import.json` recording where it came from; the vocabulary is data and
is written by the caller (runners/import_weights.py with `tf_records.vocab.export`) after
`check_new_model_dir`.
"""
import json
import os

from txl_tf import TransformerXL, TransformerXLConfig, save_model

from txl_tf.convert import huggingface, tf1_checkpoint
from txl_tf.convert.assignment import assign_all, model_variables
from txl_tf.convert.errors import WeightImportError
from txl_tf.atomic_writes import write_text_atomic

IMPORT_INFO_FILE = "import.json"


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
    """Raises `WeightImportError` when `model_dir` already holds a checkpoint."""
    if os.path.exists(os.path.join(model_dir, "checkpoint")):
        raise WeightImportError(f"{model_dir} already holds a checkpoint; import into a new "
                                "directory so that load_model cannot pick up another model.")


def write_model_dir(model, model_dir, report):
    """Save `model` (config.json + checkpoint) and import.json (`report` and the checkpoint).

    Returns:
      The checkpoint path.
    """
    check_new_model_dir(model_dir)
    path = save_model(model, model_dir)
    info = dict(report, checkpoint=os.path.basename(path))
    write_text_atomic(os.path.join(model_dir, IMPORT_INFO_FILE),
                      json.dumps(info, indent=2, sort_keys=True) + "\n")
    return path
