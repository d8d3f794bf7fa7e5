"""The SavedModel writer: EXPORT_DIR/VERSION of a `TransformerXL` for TensorFlow Serving.

`export_built_model(model, options, limits, ...)` writes the version under a temporary name
first (a serving process watching EXPORT_DIR never sees half a model; the version reserved,
swapped in and recovered after a kill by `versions`), with the signatures of `ServingModule`
(`signatures.SIGNATURES`), the export settings in VERSION/assets.extra/txl_export.json and TF
Serving's warmup requests in VERSION/assets.extra/tf_serving_warmup_requests (`warmup`); then it
writes the server's models.config and batching_parameters.txt beside the versions
(`server_config`). runners/export.py (through `txl_tf.commands.export.export_model`, which
reads a model directory) and the Keras model's `export_for_serving`
(`txl_tf/causal_lm/serving_export.py`) both call it. Errors are `ExportInputError` (a bad argument or path, exit code 2) or
`ExportRuntimeError` (reading or writing failed, exit code 1).

Example:
  >>> info = export_built_model(model, ExportOptions(export_dir="/models/txl"))
  >>> info["export_path"]
  '/models/txl/1'
"""
import dataclasses
import os
import time
from typing import Optional

import tensorflow as tf

from txl_tf.model.context_settings import ContextSettings
from txl_tf.model.lora import merged_copy
from txl_tf.runtime.error_text import first_line, is_disk_full
from txl_tf.storage.atomic_writes import write_json_atomic
from txl_tf.serving import server_config
from txl_tf.serving import warmup as serving_warmup
from txl_tf.runtime.ranges import check_fields
from txl_tf.serving.export_options import (INFO_FILE, ExportInputError, ExportOptions,
                                           ExportRuntimeError)
from txl_tf.serving.limits import ServingLimits
from txl_tf.serving.module import SIGNATURE_VERSION, ServingModule
from txl_tf.serving.serving_settings import ServingSettings
from txl_tf.serving.signatures import signature_count
from txl_tf.serving.versions import reserved_version, swap_in
from txl_tf.devices.step_compilation import choose_generation
from txl_tf.storage.dir_lock import directory_locked
from untrusted_files import dir_kinds

WARMUP_FILE = os.path.join("assets.extra", serving_warmup.WARMUP_FILE)


def check_export_dir(export_dir):
    """Usage errors about the directory of the versions: a file, or not writable."""
    if not export_dir:
        raise ExportInputError("--export_dir is required: the directory of the versions.")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise ExportInputError(f"--export_dir {export_dir} is a file: give a directory (it "
                               "holds one numbered subdirectory per exported version).")
    dir_kinds.check_kind(export_dir, dir_kinds.EXPORT, f"--export_dir {export_dir}",
                         ExportInputError)
    existing = export_dir
    while not os.path.exists(existing):
        existing = os.path.dirname(os.path.abspath(existing))
    if not os.path.isdir(existing):
        raise ExportInputError(f"--export_dir {export_dir}: {existing} is a file, not a "
                               "directory.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ExportRuntimeError(f"--export_dir {export_dir}: {existing} is not writable "
                                 "(read-only); give a directory you can write to.")


def write_saved_model(module, path, info):
    """tf.saved_model.save plus the info file and the warmup requests (run through the module
    before the save, which then reuses their traces); OS and TF failures become
    ExportRuntimeError."""
    try:
        logs = serving_warmup.warmup_logs(module, info["model_name"], info["warmup_requests"])
        tf.saved_model.save(module, path, signatures=module.signatures())
        write_json_atomic(os.path.join(path, INFO_FILE), info)
        serving_warmup.write_logs(logs, os.path.join(path, WARMUP_FILE))
    except serving_warmup.WarmupError as error:
        raise ExportRuntimeError(str(error)) from None
    except (OSError, tf.errors.OpError) as error:
        if is_disk_full(error):
            raise ExportRuntimeError(f"no space left on {os.path.dirname(path)}: free some "
                                     "space and export again.") from None
        raise ExportRuntimeError(f"writing {path} failed: {first_line(error, 400)}") from None


def run_settings(options: ExportOptions, config) -> ServingSettings:
    """The `ServingSettings` of the export: the options, else the model's."""
    o = options
    mem_len = config.mem_len if o.mem_len is None else o.mem_len
    gen_mem_len = mem_len if o.gen_mem_len is None else o.gen_mem_len
    if mem_len < 0 or gen_mem_len < 1:
        raise ExportInputError("--mem_len must be >= 0 and --gen_mem_len >= 1.")
    try:
        choice = choose_generation(o.gen_jit_compile, flag="--gen_jit_compile")
    except ValueError as error:
        raise ExportInputError(str(error)) from None
    scoring = ContextSettings.of_config(config, o.tgt_len or None, mem_len, o.clamp_len,
                                        o.same_length)
    return ServingSettings(scoring, gen_mem_len=gen_mem_len,
                           gen_seg_len=o.gen_seg_len or scoring.tgt_len,
                           gen_jit_compile=choice.mode is not None)


def check_target(options: ExportOptions) -> None:
    """The export directory, the version asked for and --warmup_requests, checked before
    anything is loaded (the version written is reserved later, under the directory's lock)."""
    check_export_dir(options.export_dir)
    check_fields(options, ExportInputError, prefix="--")  # ExportOptions.RANGES
    most = serving_warmup.MAX_RECORDS // signature_count()
    if not 0 <= options.warmup_requests <= most:
        raise ExportInputError(f"--warmup_requests must be in [0, {most}] (TF Serving reads "
                               f"{serving_warmup.MAX_RECORDS} at most), got "
                               f"{options.warmup_requests}.")
    if options.version is not None:
        final = os.path.join(options.export_dir, str(int(options.version)))
        if os.path.exists(final) and not options.overwrite:
            raise ExportInputError(f"{final} exists; pass --overwrite or another --version.")


def write_server_config(export_dir, model_name, limits):
    """models.config and batching_parameters.txt beside the versions (`server_config`); a file
    the user edited is kept and the new text goes beside it as NAME.new.

    Returns:
      ({name: path}, {name: path of NAME.new}) of the files written and of those kept.
    """
    base = os.path.abspath(export_dir)
    files = {server_config.MODELS_CONFIG: server_config.models_config_text(model_name, base),
             server_config.BATCHING_PARAMETERS: server_config.batching_parameters_text(limits)}
    try:
        done = server_config.write_files(base, files)
    except OSError as error:
        raise ExportRuntimeError(f"writing {base} failed: {error.strerror}.") from None
    return {name: os.path.join(base, name) for name in files}, done["kept"]


def export_built_model(model, options: ExportOptions, limits: Optional[ServingLimits] = None,
                       vocab_file: Optional[str] = None, codec=None,
                       source: Optional[dict] = None, checked: bool = False) -> dict:
    """Writes EXPORT_DIR/VERSION of a `TransformerXL` in memory, atomically.

    Args:
      model: the `TransformerXL` (built; dropout is off in every signature). LoRA adapters are
        merged into the kernels the export holds (`txl_tf.model.lora.merged_copy`); int8
        weights stay int8.
      options: the `ExportOptions` (`model_dir` and `checkpoint` unused).
      limits: the `ServingLimits` (default: its defaults).
      vocab_file: the vocab.txt the export ships, or None.
      codec: the in-graph text codec of the text signatures (`ModelText.graph_codec()`), or
        None for the id signatures only.
      source: what the export info records of where the weights came from (e.g. the
        checkpoint fields of `CheckpointChoice.to_json()`).
      checked: whether `check_target(options)` already ran (the version written is the one
        reserved: the next free one when `options.version` is None).

    Returns:
      The dict `export.py` prints.
    """
    limits = limits or ServingLimits()
    model = merged_copy(model)
    if not checked:
        check_target(options)  # the checks; the version is reserved below
    with reserved_version(options.export_dir, options.version) as (version, tmp):
        info, module = _module_and_info(model, options, limits, vocab_file, codec, source,
                                        version)
        start = time.time()
        write_saved_model(module, tmp, info)
        final = swap_in(tmp, options.export_dir, version, options.overwrite)
    with directory_locked(options.export_dir):  # another export's files are read whole
        files, kept = write_server_config(options.export_dir, info["model_name"], limits)
    return {"export_path": os.path.abspath(final), **info, "server_config": files,
            "server_config_kept": kept, "seconds": time.time() - start}


def _module_and_info(model, options, limits, vocab_file, codec, source, version) -> tuple:
    """(the export info, the `ServingModule`) of an export of `model` as `version`."""
    config = model.config
    settings = run_settings(options, config)
    module = ServingModule(model, settings, vocab_file=vocab_file, text_codec=codec,
                           limits=limits)
    info = {"version": version, "signatures": sorted(module.signatures()),
            "n_layer": config.n_layer, "d_model": config.d_model, "n_token": config.n_token,
            "vocab_asset": None if vocab_file is None else os.path.basename(vocab_file),
            **(source or {}), **settings.to_json(),
            "limits": dataclasses.asdict(limits), "signature_version": SIGNATURE_VERSION,
            "model_name": os.path.basename(os.path.abspath(options.export_dir)),
            "warmup_requests": options.warmup_requests}
    return info, module
