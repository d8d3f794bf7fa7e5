"""Import released Transformer-XL weights into a txl-tf model directory.

  # The authors' TF1 checkpoints (tf/sota/download.sh layout):
  python runners/import_weights.py --source=tf1 \
      --checkpoint=pretrained_xl/tf_wt103/model/model.ckpt-0 \
      --corpus_info=pretrained_xl/tf_wt103/data/corpus-info.json \
      --vocab_pickle=pretrained_xl/tf_wt103/data/cache.pkl \
      --model_dir=models/wt103-imported --tgt_len=128 --mem_len=1600 --clamp_len=1000 \
      --same_length

  # A Hugging Face TransfoXL directory (config.json + model.safetensors | tf_model.h5 |
  # pytorch_model.bin, the last only with PyTorch installed):
  python runners/import_weights.py --source=huggingface --input_dir=transfo-xl-wt103 \
      --model_dir=models/wt103-hf

The result is read by `txl_tf.load_model(model_dir)`, `runners/evaluate.py`, `generate.py`,
`export.py` and `train.py --init_checkpoint`. The configuration is inferred from the source;
run settings (segment and memory lengths, clamp_len, same_length, dropout) come from the flags
below when given. The vocabulary pickle is read with a restricted unpickler that never runs code
from the file (see tf_records/reference_vocab.py).
"""
import json
import os
import sys

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

from txl_tf.convert import huggingface, importer  # noqa: E402
from txl_tf.convert.errors import WeightImportError, read_json_object  # noqa: E402
from tf_records.reference_vocab import load_vocab_pickle  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("source", None, ["tf1", "huggingface"], "Kind of the source weights.")
flags.DEFINE_string("checkpoint", None, "--source=tf1: the TF1 checkpoint prefix "
                    "(e.g. .../model/model.ckpt-0) or its directory.")
flags.DEFINE_string("input_dir", None, "--source=huggingface: directory with config.json and "
                    "model.safetensors, tf_model.h5 or pytorch_model.bin.")
flags.DEFINE_string("model_dir", None, "Output txl-tf model directory (new or empty).")
flags.DEFINE_string("corpus_info", None, "The reference corpus-info.json (vocab_size, cutoffs, "
                    "dataset) shipped with the weights; checked against the checkpoint.")
flags.DEFINE_string("vocab_pickle", None, "A released vocabulary pickle (cache.pkl); read "
                    "without running code from it.")
flags.DEFINE_string("vocab_file", None, "Or a text vocabulary, one symbol per line in id order.")
flags.DEFINE_string("dataset", None, "Corpus name (enwik8, text8, wt103, lm1b, ...) for the "
                    "text rules in corpus-info.json; default from --corpus_info / the pickle.")
flags.DEFINE_integer("tgt_len", None, "Segment length stored in config.json.")
flags.DEFINE_integer("mem_len", None, "Memory length stored in config.json.")
flags.DEFINE_integer("clamp_len", None, "clamp_len stored in config.json (-1: none).")
flags.DEFINE_boolean("same_length", None, "same_length stored in config.json.")
flags.DEFINE_float("dropout", None, "Dropout stored in config.json (for fine-tuning).")
flags.DEFINE_float("dropatt", None, "Attention dropout stored in config.json.")
flags.DEFINE_enum("cluster_order", "tf", list(huggingface.CLUSTER_ORDERS),
                  "--source=huggingface: order of the cluster logits. 'tf' for transformers "
                  "(v4.x) and the TF1 code; 'reversed' for state dicts of the original "
                  "kimiyoung PyTorch code renamed to the Hugging Face names.")
flags.DEFINE_enum("same_length_semantics", "paper", list(huggingface.SAME_LENGTH_SEMANTICS),
                  "--source=huggingface with same_length: 'paper' keeps mem_len (each query "
                  "sees mem_len + 1 keys, as the original TF code); 'huggingface' stores "
                  "mem_len - 1 so that txl-tf reproduces Hugging Face's outputs exactly.")


def _run_settings():
    names = ("tgt_len", "mem_len", "clamp_len", "same_length", "dropout", "dropatt")
    return {n: getattr(FLAGS, n) for n in names if getattr(FLAGS, n) is not None}


def _vocabulary(corpus):
    """(symbols or None, dataset or None)."""
    dataset = FLAGS.dataset or (corpus or {}).get("dataset")
    if FLAGS.vocab_pickle and FLAGS.vocab_file:
        raise WeightImportError("pass --vocab_pickle or --vocab_file, not both.")
    if FLAGS.vocab_pickle:
        symbols, info = load_vocab_pickle(FLAGS.vocab_pickle)
        return symbols, dataset or info.get("dataset")
    if FLAGS.vocab_file:
        with open(FLAGS.vocab_file, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f], dataset
    return None, dataset


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if os.path.exists(FLAGS.model_dir) and not os.path.isdir(FLAGS.model_dir):
        raise WeightImportError(f"--model_dir={FLAGS.model_dir} is a file; give a new or "
                                "empty directory.")
    corpus = read_json_object(
        FLAGS.corpus_info, f"--corpus_info={FLAGS.corpus_info}",
        "the corpus-info.json shipped with the weights") if FLAGS.corpus_info else None
    symbols, dataset = _vocabulary(corpus)
    if FLAGS.source == "tf1":
        if not FLAGS.checkpoint:
            raise app.UsageError("--source=tf1 needs --checkpoint.")
        model, report = importer.import_tf1(
            FLAGS.checkpoint, _run_settings(), corpus_cutoffs=(corpus or {}).get("cutoffs"))
    elif FLAGS.source == "huggingface":
        if not FLAGS.input_dir:
            raise app.UsageError("--source=huggingface needs --input_dir.")
        model, report = importer.import_huggingface(
            FLAGS.input_dir, _run_settings(), cluster_order=FLAGS.cluster_order,
            same_length_semantics=FLAGS.same_length_semantics)
    else:
        raise app.UsageError("--source is required (tf1 or huggingface).")
    if corpus is not None and corpus.get("vocab_size") not in (None, model.config.n_token):
        raise WeightImportError(f"--corpus_info vocab_size {corpus['vocab_size']} differs "
                                f"from the checkpoint's n_token {model.config.n_token}.")
    path = importer.write_model_dir(model, FLAGS.model_dir, report, symbols, dataset)
    c = model.config
    print(f"imported {report['source']} weights: {len(model.weights)} variables, n_layer "
          f"{c.n_layer}, d_model {c.d_model}, n_token {c.n_token}, cutoffs {list(c.cutoffs)}, "
          f"div_val {c.div_val}, untie_r {c.untie_r}, proj_same_dim {c.proj_same_dim}, "
          f"proj_share_all_but_first {c.proj_share_all_but_first}")
    if report.get("ignored"):
        print(f"ignored source variables: {sorted(report['ignored'])}")
    print(f"wrote {path}" + (" and vocab.txt, corpus-info.json" if symbols else
                             " (no vocabulary given: pass --vocab_pickle or --vocab_file)"))
    return 0


if __name__ == "__main__":
    flags.mark_flag_as_required("source")
    cli.run(main)
