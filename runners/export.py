"""Export a txl-tf model directory as a SavedModel for TensorFlow Serving.

Example:
  python runners/export.py --model_dir=/ckpt/wt103 --export_dir=/models/txl \
      --mem_len=1600 --clamp_len=1000 --same_length --gen_mem_len=1600

writes /models/txl/<version>/ (version: --version, default one more than the highest existing),
under a temporary name first, so a serving process watching /models/txl never sees half a model.
Signatures: serving_default (= score), score, nll, init_mems, generate, and with
--text_signatures (default) generate_text and score_text; see txl_tf/inference/serving.py.

Every request is bounded by limits fixed here and checked inside the graph: --max_seq_len
(tokens per row of score / nll / generate), --max_num_tokens (tokens generated per call),
--max_text_bytes (UTF-8 bytes per text of score_text / generate_text), --max_batch_size (rows
per request). They are recorded in
<version>/assets.extra/txl_export.json with the other export settings.

The text signatures hold tensorflow_text ops: running them needs the TF Text ops registered
(`import tensorflow_text`, or a TF Serving build that includes them). `tf.saved_model.load`
resolves every op when it loads, so a Python consumer without tensorflow_text needs an export
made with --notext_signatures; the session-based loader (TF Serving, `saved_model_cli run`)
runs the id-based signatures of a full export with TensorFlow alone.
Prints one JSON line: {"export_path", "version", "signatures", ...}. Errors are one line on
stderr: exit code 2 for a bad flag or path, 1 for a failure while exporting (unreadable
checkpoint, disk full). --verbosity=0 shows TensorFlow's INFO log.
"""
import dataclasses
import errno
import json
import os
import re
import shutil
import sys
import time

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
INFO_FILE = os.path.join("assets.extra", "txl_export.json")


def define_flags():
    """Defines the flags of this runner (only when it runs as a program, so that its
    functions can be imported beside other runners)."""
    flags.DEFINE_string("model_dir", None, "Model directory (config.json, checkpoints, vocab.txt, "
                        "corpus-info.json).")
    flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to "
                        "EXPORT_DIR/VERSION.")
    flags.DEFINE_integer("version", None, "Version number (default: highest existing + 1, or 1).")
    flags.DEFINE_boolean("overwrite", False, "Replace an existing EXPORT_DIR/VERSION.")
    flags.DEFINE_integer("tgt_len", None, "Segment length of score_text (default: the model's).")
    flags.DEFINE_integer("mem_len", None, "Memory kept by score / nll / score_text "
                         "(default: the model's).")
    flags.DEFINE_integer("clamp_len", None, "Clamp relative distances (default: the model's).")
    flags.DEFINE_boolean("same_length", None, "same_length of score / nll / score_text "
                         "(default: the model's).")
    flags.DEFINE_integer("gen_mem_len", None, "Memory of the generate signatures (default: "
                         "--mem_len's value).")
    flags.DEFINE_integer("gen_seg_len", None, "Prompt segment length of the generate signatures "
                         "(default: tgt_len).")
    flags.DEFINE_boolean("text_signatures", True, "Add generate_text and score_text (need "
                         "tensorflow_text ops where the SavedModel is loaded).")
    from txl_tf.inference.serving import ServingLimits
    defaults = ServingLimits()
    flags.DEFINE_integer("max_seq_len", defaults.max_seq_len, "Longest tokens / prompt row "
                         "(tokens) a request may send to score, nll or generate.")
    flags.DEFINE_integer("max_num_tokens", defaults.max_num_tokens, "Most tokens generate and "
                         "generate_text produce per request.")
    flags.DEFINE_integer("max_text_bytes", defaults.max_text_bytes, "Longest text (UTF-8 bytes) "
                         "of score_text and generate_text.")
    flags.DEFINE_integer("max_batch_size", defaults.max_batch_size, "Most rows (texts) of one "
                         "request, and init_mems' largest batch_size.")


class ExportInputError(ValueError):
    """A bad flag or path given by the user (exit code 2)."""
    exit_code = 2


class ExportRuntimeError(RuntimeError):
    """A failure while exporting: unreadable model files, disk full... (exit code 1)."""
    exit_code = 1


def next_version(export_dir):
    versions = [int(n) for n in os.listdir(export_dir) if re.fullmatch(r"\d+", n)] \
        if os.path.isdir(export_dir) else []
    return max(versions, default=0) + 1


def check_paths(model_dir, export_dir):
    """Usage errors about the two directories, found before TensorFlow loads anything."""
    if not model_dir or not export_dir:
        raise ExportInputError("--model_dir and --export_dir are required.")
    if not os.path.isdir(model_dir):
        what = "is not a directory" if os.path.exists(model_dir) else "does not exist"
        raise ExportInputError(f"--model_dir {model_dir} {what}: give the directory of a "
                               "trained (runners/train.py) or imported model.")
    if not os.path.isfile(os.path.join(model_dir, "config.json")):
        raise ExportInputError(f"--model_dir {model_dir} has no config.json: it is not a "
                               "txl-tf model directory (train or import a model into it first).")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise ExportInputError(f"--export_dir {export_dir} is a file: give a directory (it "
                               "holds one numbered subdirectory per exported version).")
    existing = export_dir
    while not os.path.exists(existing):
        existing = os.path.dirname(os.path.abspath(existing))
    if not os.path.isdir(existing):
        raise ExportInputError(f"--export_dir {export_dir}: {existing} is a file, not a "
                               "directory.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ExportRuntimeError(f"--export_dir {export_dir}: {existing} is not writable "
                                 "(read-only); give a directory you can write to.")


def remove_stale_temporaries(export_dir):
    """Removes `.tmp-<version>-<pid>` directories left by exports that were killed."""
    for name in os.listdir(export_dir):
        match = re.fullmatch(r"\.tmp-\d+-(\d+)", name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(export_dir, name), ignore_errors=True)
        except OSError:
            pass  # alive, owned by another user


def load(model_dir, text_signatures):
    """(config, model, ModelVocab or None) of a model directory; errors are export errors."""
    import tensorflow as tf

    import txl_tf
    from tf_records import model_vocab

    try:
        config = txl_tf.load_config(model_dir)
    except (ValueError, txl_tf.ConfigError) as error:
        raise ExportRuntimeError(f"cannot read {os.path.join(model_dir, 'config.json')}: "
                                 f"{error}") from None
    if config.attn_type != 0:
        raise ExportInputError("only Transformer-XL models (attn_type=0) can be exported: the "
                               "signatures carry the memory.")
    if txl_tf.latest_checkpoint(model_dir) is None:
        raise ExportInputError(f"--model_dir {model_dir} has no checkpoint yet (no "
                               "'checkpoint' file): train it first or wait for its first save.")
    try:
        model = txl_tf.load_model(model_dir, dropout=0.0, dropatt=0.0)
    except (txl_tf.ModelDirError, tf.errors.OpError, IndexError, ValueError) as error:
        # IndexError: TensorFlow's checkpoint reader on a truncated file.
        message = getattr(error, "message", None) or str(error)
        raise ExportRuntimeError(f"cannot read the checkpoint of {model_dir}: "
                                 f"{message.splitlines()[0]}") from None
    vocab_path = os.path.join(model_dir, model_vocab.VOCAB_FILE)
    mv = None
    if text_signatures or os.path.isfile(vocab_path):
        try:
            mv = model_vocab.load_model_vocab(model_dir, config.n_token)
        except model_vocab.ModelVocabError as error:
            if text_signatures:
                raise ExportInputError(
                    f"{error} (the text signatures need it; --notext_signatures exports the "
                    "id-based signatures only).") from None
            raise ExportRuntimeError(str(error)) from None
    return config, model, mv


def write_saved_model(module, path, info):
    """tf.saved_model.save plus the info file; OS and TF failures become ExportRuntimeError."""
    import tensorflow as tf

    try:
        tf.saved_model.save(module, path, signatures=module.signatures())
        os.makedirs(os.path.dirname(os.path.join(path, INFO_FILE)))
        with open(os.path.join(path, INFO_FILE), "w") as f:
            json.dump(info, f, indent=2, sort_keys=True)
            f.write("\n")
    except (OSError, tf.errors.OpError) as error:
        text = getattr(error, "message", None) or str(error)
        if getattr(error, "errno", None) == errno.ENOSPC or "No space left" in text:
            raise ExportRuntimeError(f"no space left on {os.path.dirname(path)}: free some "
                                     "space and export again.") from None
        raise ExportRuntimeError(f"writing {path} failed: {text.splitlines()[0]}") from None


def export(model_dir, export_dir, version=None, overwrite=False, tgt_len=None, mem_len=None,
           clamp_len=None, same_length=None, gen_mem_len=None, gen_seg_len=None,
           text_signatures=True, limits=None):
    """Writes EXPORT_DIR/VERSION atomically (a temporary directory renamed into place).

    Args:
      model_dir, export_dir: as the flags.
      version: int or None (highest existing + 1).
      limits: a `txl_tf.inference.serving.ServingLimits` (default: its defaults).
      The others: run settings of the signatures (None: the model's).

    Returns:
      A dict describing the export (what `export.py` prints).

    Raises:
      ExportInputError: a bad argument or path. ExportRuntimeError: reading or writing failed.
    """
    from txl_tf.inference.serving import ServingLimits, ServingModule

    check_paths(model_dir, export_dir)
    limits = limits or ServingLimits()
    version = next_version(export_dir) if version is None else int(version)
    if version < 0:
        raise ExportInputError(f"--version must be >= 0, got {version}.")
    final = os.path.join(export_dir, str(version))
    if os.path.exists(final) and not overwrite:
        raise ExportInputError(f"{final} exists; pass --overwrite or another --version.")
    config, model, mv = load(model_dir, text_signatures)
    if text_signatures:
        import tensorflow_text  # noqa: F401  (registers the ops the text signatures use)
    mem_len = config.mem_len if mem_len is None else mem_len
    settings = dict(
        mem_len=mem_len, clamp_len=config.clamp_len if clamp_len is None else clamp_len,
        same_length=config.same_length if same_length is None else same_length,
        tgt_len=tgt_len or config.tgt_len,
        gen_mem_len=mem_len if gen_mem_len is None else gen_mem_len,
        gen_seg_len=gen_seg_len or tgt_len or config.tgt_len)
    if settings["mem_len"] < 0 or settings["gen_mem_len"] < 1:
        raise ExportInputError("--mem_len must be >= 0 and --gen_mem_len >= 1.")
    from tf_records.graph_text import GraphText
    module = ServingModule(model, vocab_file=None if mv is None else mv.vocab_path,
                           text_codec=GraphText(mv) if text_signatures else None,
                           limits=limits, **settings)

    import txl_tf
    info = {"version": version, "signatures": sorted(module.signatures()),
            "n_layer": config.n_layer, "d_model": config.d_model, "n_token": config.n_token,
            "vocab_asset": None if mv is None else os.path.basename(mv.vocab_path),
            "checkpoint": txl_tf.latest_checkpoint(model_dir), **settings,
            "limits": dataclasses.asdict(limits)}
    try:
        os.makedirs(export_dir, exist_ok=True)
        remove_stale_temporaries(export_dir)
    except OSError as error:
        raise ExportInputError(f"--export_dir {export_dir}: {error.strerror}.") from None
    tmp = os.path.join(export_dir, f".tmp-{version}-{os.getpid()}")
    old = tmp + "-replaced"
    start = time.time()
    try:
        write_saved_model(module, tmp, info)
        if os.path.exists(final):  # --overwrite: the old version stays whole until replaced
            os.replace(final, old)
        os.replace(tmp, final)
    finally:
        for leftover in (tmp, old):
            if os.path.exists(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
    return {"export_path": os.path.abspath(final), **info, "seconds": time.time() - start}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    f = FLAGS
    cli.check_directories(model_dir=f.model_dir, export_dir=f.export_dir)
    from txl_tf.inference.serving import ServingLimits
    limits = ServingLimits(f.max_seq_len, f.max_num_tokens, f.max_text_bytes, f.max_batch_size)
    out = export(f.model_dir, f.export_dir, f.version, f.overwrite, f.tgt_len, f.mem_len,
                 f.clamp_len, f.same_length, f.gen_mem_len, f.gen_seg_len, f.text_signatures,
                 limits)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
