"""The preprocessor classes a preset may name, and building one from its serialized config.

A preset's preprocessor.json is `keras.saving.serialize_keras_object(preprocessor)`: it names
a module and a class. A preset is data from others, so nothing its files name is imported or
run: the class is looked up in a fixed table of txl-tf's own classes (`PREPROCESSOR_CLASSES`),
whose modules are imported by these constant names, never by a file's.

Example:
  >>> preprocessor = deserialize_preprocessor(MODEL_DIR_PREPROCESSOR, "runs/default")
"""
import importlib
import os

from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.runtime.error_text import first_line
from txl_tf.storage.model_dir_layout import PRESET_PREPROCESSOR_FILE

# The preprocessor of a model directory's vocab.txt and corpus-info.json: what a preset's
# preprocessor.json holds for it. Data, not an import: its module is imported (from
# PREPROCESSOR_CLASSES) when a directory with a vocabulary is loaded (txl_tf does not depend
# on tf_records).
MODEL_DIR_PREPROCESSOR = {"module": "tf_records.causal_lm_preprocessor",
                          "class_name": "CausalLMPreprocessor",
                          "registered_name": "tf_records>CausalLMPreprocessor",
                          "config": {"name": "preprocessor"}}
# The only preprocessor classes a preprocessor.json may name: (module, class name) -> the
# registered Keras name.
PREPROCESSOR_CLASSES = {
    (MODEL_DIR_PREPROCESSOR["module"], MODEL_DIR_PREPROCESSOR["class_name"]):
        MODEL_DIR_PREPROCESSOR["registered_name"],
}


def preprocessor_class(spec, source: str):
    """The class `spec` names, looked up in `PREPROCESSOR_CLASSES` (nothing else is imported).

    Raises:
      CausalLMInputError: `spec` is not a serialized Keras object, or names another class.
    """
    fix = "save the preset again with txl-tf"
    if not isinstance(spec, dict):
        raise CausalLMInputError(f"{source} holds a JSON {type(spec).__name__}, not a "
                                 f"serialized Keras object; {fix}.")
    module, name = spec.get("module"), spec.get("class_name")
    if not isinstance(module, str) or not isinstance(name, str):
        raise CausalLMInputError(f"{source} is not a serialized Keras object (no 'module' and "
                                 f"'class_name' strings); {fix}.")
    registered = PREPROCESSOR_CLASSES.get((module, name))
    if registered is None or spec.get("registered_name", registered) != registered:
        allowed = ", ".join(f"{m}.{c}" for m, c in PREPROCESSOR_CLASSES)
        raise CausalLMInputError(
            f"{source} names the preprocessor {module[:80]!r}.{name[:80]!r}, which is not "
            f"txl-tf's ({allowed}); a preset runs no code it names: pass preprocessor= "
            "(your own, already imported) or save the preset with txl-tf's preprocessor.")
    return getattr(importlib.import_module(module), name)  # one of the table's modules


def deserialize_preprocessor(spec, assets_dir: str, source: str = None):
    """The preprocessor a serialized config describes, its assets read from `assets_dir`.

    Args:
      spec: the serialized config (preprocessor.json): module and class must be one of
        `PREPROCESSOR_CLASSES`; of its config only `name` and `trainable` are read.
      assets_dir: the directory of its vocab.txt and corpus-info.json.
      source: the file the spec came from, for messages (default: assets_dir's
        preprocessor.json).

    Raises:
      CausalLMInputError: a class outside `PREPROCESSOR_CLASSES` or a malformed spec.
    """
    source = source or os.path.join(assets_dir, PRESET_PREPROCESSOR_FILE)
    cls = preprocessor_class(spec, source)
    config = spec.get("config", {})
    if not isinstance(config, dict):
        raise CausalLMInputError(f"{source}: 'config' is a JSON {type(config).__name__}, not "
                                 "an object; save the preset again with txl-tf.")
    kwargs = {k: config[k] for k in ("name", "trainable") if k in config}
    if not isinstance(kwargs.get("name", ""), str) or not isinstance(
            kwargs.get("trainable", True), bool):
        raise CausalLMInputError(f"{source}: 'config' has a 'name' that is not a string or a "
                                 "'trainable' that is not true/false; save the preset again "
                                 "with txl-tf.")
    try:
        preprocessor = cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise CausalLMInputError(f"{source}: its 'config' is refused by {cls.__name__} "
                                 f"({first_line(error, 200)}); save the preset again "
                                 "with txl-tf.") from None
    preprocessor.load_assets(assets_dir)
    return preprocessor
