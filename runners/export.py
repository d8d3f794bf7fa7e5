"""Export a txl-tf model directory as a SavedModel for TensorFlow Serving.

Example:
  python runners/export.py --model_dir=/ckpt/wt103 --export_dir=/models/txl \
      --mem_len=1600 --clamp_len=1000 --same_length --gen_mem_len=1600

writes /models/txl/<version>/ (version: --version, default one more than the highest existing),
under a temporary name first, so a serving process watching /models/txl never sees half a model.
Signatures: serving_default (= score), score, nll, init_mems, generate, and with
--text_signatures (default) generate_text and score_text; see runners/serving_module.py.

The text signatures hold tensorflow_text ops. TensorFlow resolves every op of a SavedModel when
it loads it, so a loader without them (`import tensorflow` only) needs an export made with
--notext_signatures; TF Serving builds that include the TF Text ops load the full export.
Prints one JSON line: {"export_path", "version", "signatures", ...}.
"""
import json
import os
import re
import shutil
import sys
import time

# Runnable as `python runners/export.py` from the repository root without installing.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS


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


class ExportInputError(ValueError):
    """Bad export input."""


def next_version(export_dir):
    versions = [int(n) for n in os.listdir(export_dir) if re.fullmatch(r"\d+", n)] \
        if os.path.isdir(export_dir) else []
    return max(versions, default=0) + 1


def export(model_dir, export_dir, version=None, overwrite=False, tgt_len=None, mem_len=None,
           clamp_len=None, same_length=None, gen_mem_len=None, gen_seg_len=None,
           text_signatures=True):
    """Writes the SavedModel; returns a dict describing it."""
    import tensorflow as tf

    import txl_tf
    from runners import model_vocab
    from runners.serving_module import ServingModule

    if not model_dir or not export_dir:
        raise ExportInputError("--model_dir and --export_dir are required.")
    config = txl_tf.load_config(model_dir)
    model = txl_tf.load_model(model_dir, dropout=0.0, dropatt=0.0)
    if config.attn_type != 0:
        raise ExportInputError("only Transformer-XL models (attn_type=0) can be exported: the "
                               "signatures carry the memory.")
    vocab_path = os.path.join(model_dir, model_vocab.VOCAB_FILE)
    mv = None
    if text_signatures or os.path.isfile(vocab_path):
        try:
            mv = model_vocab.load_model_vocab(model_dir, config.n_token)
        except model_vocab.ModelVocabError as error:
            if text_signatures:
                raise model_vocab.ModelVocabError(
                    f"{error} (the text signatures need it; --notext_signatures exports the "
                    "id-based signatures only).") from None
            raise
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
    module = ServingModule(model, model_vocab=mv, text_signatures=text_signatures, **settings)

    version = next_version(export_dir) if version is None else int(version)
    final = os.path.join(export_dir, str(version))
    if os.path.exists(final):
        if not overwrite:
            raise ExportInputError(f"{final} exists; pass --overwrite or another --version.")
    os.makedirs(export_dir, exist_ok=True)
    tmp = os.path.join(export_dir, f".tmp-{version}-{os.getpid()}")
    start = time.time()
    signatures = module.signatures()
    try:
        tf.saved_model.save(module, tmp, signatures=signatures)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    return {"export_path": os.path.abspath(final), "version": version,
            "signatures": sorted(signatures), "n_layer": config.n_layer,
            "d_model": config.d_model, "n_token": config.n_token,
            "vocab_asset": None if mv is None else os.path.basename(mv.vocab_path),
            "checkpoint": txl_tf.latest_checkpoint(model_dir),
            "seconds": time.time() - start, **settings}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    f = FLAGS
    cli.check_directories(model_dir=f.model_dir, export_dir=f.export_dir)
    out = export(f.model_dir, f.export_dir, f.version, f.overwrite, f.tgt_len, f.mem_len,
                 f.clamp_len, f.same_length, f.gen_mem_len, f.gen_seg_len, f.text_signatures)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
