"""The export command: a model directory written as a versioned SavedModel for TF Serving.

`export_model(options, limits, data)` reads the model directory `options.model_dir` (its
config, the chosen checkpoint, its vocabulary and text codec) and hands the model to the
SavedModel writer, `txl_tf.serving.saved_model_writer.export_built_model` (the signatures,
warmup requests, server configuration and atomic version directory are described there).
Errors are `ExportInputError` (a bad argument or path, exit code 2) or `ExportRuntimeError`
(reading or writing failed, exit code 1).
"""
import os
from typing import Optional

import tensorflow as tf

from txl_tf.storage import model_files
from txl_tf.storage import model_dir_layout
from txl_tf.commands.inference_model import load_inference_model
from txl_tf.runtime.error_text import one_line
from txl_tf.model.data_interfaces import TextData
from txl_tf.serving.export_options import ExportInputError, ExportOptions, ExportRuntimeError
from txl_tf.serving.limits import ServingLimits
from txl_tf.serving.saved_model_writer import check_target, export_built_model


def check_paths(model_dir, export_dir):
    """Usage errors about the model directory and a missing --export_dir (the export directory
    itself is `check_target`'s), found before anything is loaded."""
    if not model_dir or not export_dir:
        raise ExportInputError("--model_dir and --export_dir are required.")
    if not os.path.isdir(model_dir):
        what = "is not a directory" if os.path.exists(model_dir) else "does not exist"
        raise ExportInputError(f"--model_dir {model_dir} {what}: give the directory of a "
                               "trained (runners/train.py) or imported model.")
    if not os.path.isfile(model_dir_layout.config_path(model_dir)):
        raise ExportInputError(f"--model_dir {model_dir} has no config.json: it is not a "
                               "txl-tf model directory (train or import a model into it first).")


def vocabulary(options: ExportOptions, config, data: Optional[TextData]) -> tuple:
    """(vocabulary file or None, in-graph text codec or None): what the export ships and
    tokenizes text with (see `ServingModule`): the model's vocab.txt when it has one and, for
    the text signatures, its codec. Raises the export errors."""
    text_signatures = options.text_signatures
    if data is None or (not text_signatures and not data.has_vocabulary(options.model_dir)):
        return None, None
    try:
        text = data.model_text(options.model_dir, config.n_token)
    except ValueError as error:  # the data package's vocabulary error, its message the fix
        if text_signatures:
            raise ExportInputError(
                f"{error} (the text signatures need it; --notext_signatures exports the "
                "id-based signatures only).") from None
        raise ExportRuntimeError(str(error)) from None
    return text.vocab_path, text.graph_codec() if text_signatures else None


def read_model(model_dir, checkpoint=model_files.LATEST):
    """(config, model, `CheckpointChoice`) of a model directory, dropout off; the choice is
    named in one line on stderr; errors are export errors."""
    try:
        config = model_files.load_config(model_dir)
    except (ValueError, model_files.ModelDirError) as error:  # the message names config.json
        raise ExportRuntimeError(str(error)) from None
    if model_files.latest_checkpoint(model_dir) is None and checkpoint == model_files.LATEST:
        raise ExportInputError(f"--model_dir {model_dir} has no checkpoint yet (no "
                               "'checkpoint' file): train it first or wait for its first save.")
    try:
        choice = model_files.choose_checkpoint(model_dir, checkpoint)
    except model_files.ModelDirError as error:
        raise ExportInputError(str(error)) from None
    try:
        model = load_inference_model(model_dir, choice)
    except (model_files.ModelDirError, tf.errors.OpError, IndexError, ValueError) as error:
        # IndexError: TensorFlow's checkpoint reader on a truncated file.
        message = getattr(error, "message", None) or str(error)
        raise ExportRuntimeError(f"cannot read the checkpoint of {model_dir}: "
                                 f"{one_line(message)}") from None
    return config, model, choice


def export_model(options: ExportOptions, limits: Optional[ServingLimits] = None,
                 data: Optional[TextData] = None) -> dict:
    """Writes EXPORT_DIR/VERSION of the model directory `options.model_dir` atomically (a
    temporary directory renamed into place).

    Args:
      options: the `ExportOptions`.
      limits: the `ServingLimits` (default: its defaults).
      data: the `TextData` (`txl_tf/model/data_interfaces.py`;
        `tf_records.model_data.ModelData`) that gives the model's vocabulary and text codec; None: no vocabulary and no text
        signatures.

    Returns:
      A dict describing the export (what `export.py` prints).

    Raises:
      ExportInputError: a bad argument or path. ExportRuntimeError: reading or writing failed.
    """
    check_paths(options.model_dir, options.export_dir)
    check_target(options)
    config, model, choice = read_model(options.model_dir, options.checkpoint)
    vocab_file, codec = vocabulary(options, config, data)
    return export_built_model(model, options, limits, vocab_file, codec, choice.to_json(),
                              checked=True)
