"""Presets of a causal language model: one directory a Keras user saves, copies and loads.

A preset directory holds (the names: `txl_tf/storage/model_dir_layout.py`)

  config.json          the `TransformerXLConfig` (the same file as a model directory's)
  model.weights.h5     the backbone's weights (the file of `keras.Model.save_weights`, built
                       in memory: weight_bytes.py)
  preprocessor.json    `keras.saving.serialize_keras_object(preprocessor)`: it names the
                       preprocessor's module and class, which a reader looks up in a fixed
                       table of txl-tf's own classes (preprocessor_classes.py): a preset is
                       data from others, and nothing its files name is imported or run
  vocab.txt,           the preprocessor's vocabulary and text rules (its `save_assets`; the
  corpus-info.json     same pair as a model directory's), text and JSON
  metadata.json        versions of txl_tf / TensorFlow / Keras, parameter count, the training
                       data and where the weights came from (metadata_file.py)

The modules, one job each:

  writing.py               `save_to_preset`: the directory written whole and swapped in;
                           `recover_preset`: a replacement killed between its renames undone
  loading.py               `load_preset`: (backbone, preprocessor) of a preset or a txl-tf
                           model directory (any checkpoint); `find_preprocessor`
  from_model_dir.py        `preset_from_model_dir`: a preset of a model directory
  preprocessor_classes.py  the classes a preprocessor.json may name, and building one
  weight_bytes.py          model.weights.h5's bytes through Keras' private HDF5 store
  metadata_file.py         metadata.json
  preprocessor_check.py    a given preprocessor's vocabulary checked against the directory's

`TransformerXLCausalLM.save_to_preset` / `from_preset` (causal_lm/task_methods.py) call
`save_to_preset` and `load_preset`; this package also offers them, and the names below, as
`txl_tf.causal_lm.presets.NAME`.

Example:
  >>> save_to_preset(causal_lm, "presets/tiny")
  >>> backbone, preprocessor = load_preset("presets/tiny")
  >>> backbone, preprocessor = load_preset("runs/default", checkpoint="best")
"""
from txl_tf.causal_lm.presets.from_model_dir import model_dir_source, preset_from_model_dir
from txl_tf.causal_lm.presets.loading import find_preprocessor, load_preset
from txl_tf.causal_lm.presets.metadata_file import DATA_FIELDS, QUANTIZATION_FIELD, metadata
from txl_tf.causal_lm.presets.preprocessor_classes import (MODEL_DIR_PREPROCESSOR,
                                                           PREPROCESSOR_CLASSES,
                                                           deserialize_preprocessor)
from txl_tf.causal_lm.presets.weight_bytes import weights_file_bytes
from txl_tf.causal_lm.presets.writing import recover_preset, save_to_preset

__all__ = ["DATA_FIELDS", "MODEL_DIR_PREPROCESSOR", "PREPROCESSOR_CLASSES", "QUANTIZATION_FIELD",
           "deserialize_preprocessor", "find_preprocessor", "load_preset", "metadata",
           "model_dir_source", "preset_from_model_dir", "recover_preset", "save_to_preset",
           "weights_file_bytes"]
