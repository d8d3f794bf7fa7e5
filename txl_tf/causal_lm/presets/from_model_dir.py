"""A preset of a model directory: its weights and vocabulary, with metadata.json's `source`
naming the checkpoint and what the directory's train_summary.json or import.json record.

Example:
  >>> preset_from_model_dir("runs/default", "presets/default", checkpoint="best")
  '/home/me/presets/default'
"""
import os
import types

from txl_tf.causal_lm.presets.loading import load_preset, read_json
from txl_tf.causal_lm.presets.writing import save_to_preset
from txl_tf.storage import model_files
from txl_tf.storage.model_dir_layout import IMPORT_FILE, TRAIN_SUMMARY_FILE


def model_dir_source(model_dir, checkpoint=model_files.LATEST) -> dict:
    """metadata.json's `source` for weights read from a model directory: the checkpoint and
    what train_summary.json or import.json record."""
    choice = model_files.choose_checkpoint(model_dir, checkpoint)
    source = {"model_dir": os.path.abspath(model_dir), **choice.to_json()}
    for name in (TRAIN_SUMMARY_FILE, IMPORT_FILE):
        path = os.path.join(model_dir, name)
        if os.path.lexists(path):
            source[os.path.splitext(name)[0]] = read_json(path)
    return source


def preset_from_model_dir(model_dir, preset_dir, checkpoint=model_files.LATEST,
                          preprocessor=None) -> str:
    """Writes a preset of a model directory (trained, or imported from the authors' TF1
    checkpoints or Hugging Face weights by runners/import_weights.py); returns its path."""
    backbone, preprocessor = load_preset(model_dir, checkpoint, preprocessor)
    return save_to_preset(types.SimpleNamespace(backbone=backbone, preprocessor=preprocessor),
                          preset_dir, source=model_dir_source(model_dir, checkpoint))
