"""Import released Transformer-XL weights into a txl-tf model directory.

  python runners/import_weights.py --source=tf1 --checkpoint=tf_wt103/model/model.ckpt-0 \
      --corpus_info=tf_wt103/data/corpus-info.json --vocab_pickle=tf_wt103/data/cache.pkl \
      --model_dir=models/wt103-imported --tgt_len=128 --mem_len=1600 --clamp_len=1000 --same_length
  python runners/import_weights.py --source=huggingface --input_dir=transfo-xl-wt103 \
      --model_dir=models/wt103-hf  # config.json + model.safetensors, tf_model.h5 or .bin

--preset_dir also writes a Keras preset of the result (`txl_tf.causal_lm.presets`).

txl_tf/convert infers the configuration (run settings from the flags when given) and maps the
weights; tf_records reads the vocabulary pickle without running code from it and writes vocab.txt
and corpus-info.json. `txl_tf.load_model(model_dir)` and every runner read the result.
"""
from absl import app, flags

from runners import cli
from tf_records.vocab import export as vocab_export
from tf_records.vocab.reference_pickle import load_vocab_pickle
from txl_tf.convert import huggingface
from txl_tf.convert.errors import WeightImportError, read_json_object

FLAGS = flags.FLAGS
RUN_SETTINGS = ("tgt_len", "mem_len", "clamp_len", "same_length", "dropout", "dropatt")
flags.DEFINE_enum("source", None, ["tf1", "huggingface"], "Kind of the source weights.")
flags.DEFINE_string("checkpoint", None, "--source=tf1: the TF1 checkpoint prefix "
                    "(e.g. .../model/model.ckpt-0) or its directory.")
flags.DEFINE_string("input_dir", None, "--source=huggingface: directory with config.json and "
                    "model.safetensors, tf_model.h5 or pytorch_model.bin.")
flags.DEFINE_string("model_dir", None, "Output txl-tf model directory (new or empty).")
flags.DEFINE_string("preset_dir", None, "Also write a Keras preset of the imported model here "
                    "(new, empty or a preset; TransformerXLCausalLM.from_preset reads it).")
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


def _vocabulary(corpus):
    """(symbols or None, dataset or None) of --vocab_pickle / --vocab_file."""
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


def _import(corpus, import_weights):
    """(model, report) of --source."""
    run = {n: FLAGS[n].value for n in RUN_SETTINGS if FLAGS[n].value is not None}
    if FLAGS.source == "tf1":
        return import_weights.import_tf1(FLAGS.checkpoint, run, (corpus or {}).get("cutoffs"))
    return import_weights.import_huggingface(FLAGS.input_dir, run, FLAGS.cluster_order,
                                       FLAGS.same_length_semantics)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    if FLAGS.source == "tf1" and not FLAGS.checkpoint:
        raise app.UsageError("--source=tf1 needs --checkpoint.")
    if FLAGS.source == "huggingface" and not FLAGS.input_dir:
        raise app.UsageError("--source=huggingface needs --input_dir.")
    cli.check_directories(model_dir=FLAGS.model_dir, preset_dir=FLAGS.preset_dir)
    with cli.locked(FLAGS.model_dir):  # one import into a directory at a time
        _import_into_model_dir()


def _import_into_model_dir():
    corpus = FLAGS.corpus_info and read_json_object(
        FLAGS.corpus_info, f"--corpus_info={FLAGS.corpus_info}",
        "the corpus-info.json shipped with the weights")
    symbols, dataset = _vocabulary(corpus)
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.commands import import_weights
    model, report = _import(corpus, import_weights)
    c = model.config
    if corpus and corpus.get("vocab_size") not in (None, c.n_token):
        raise WeightImportError(f"--corpus_info vocab_size {corpus['vocab_size']} differs "
                                f"from the checkpoint's n_token {c.n_token}.")
    import_weights.check_new_model_dir(FLAGS.model_dir)  # before the vocabulary is written
    if symbols is not None:
        vocab_export.write_vocabulary(FLAGS.model_dir, symbols, dataset, c.cutoffs, c.n_token)
    path = import_weights.write_model_dir(model, FLAGS.model_dir, report)
    print(f"imported {report['source']} weights: {len(model.weights)} variables, n_layer "
          f"{c.n_layer}, d_model {c.d_model}, n_token {c.n_token}, cutoffs {list(c.cutoffs)}, "
          f"div_val {c.div_val}, untie_r {c.untie_r}, proj_same_dim {c.proj_same_dim}, "
          f"proj_share_all_but_first {c.proj_share_all_but_first}")
    if report.get("ignored"):
        print(f"ignored source variables: {sorted(report['ignored'])}")
    print(f"wrote {path}" + (" and vocab.txt, corpus-info.json" if symbols else
                             " (no vocabulary given: pass --vocab_pickle or --vocab_file)"))
    if FLAGS.preset_dir:
        from txl_tf.causal_lm.presets import preset_from_model_dir  # TensorFlow: after the flags
        print(f"wrote the preset {preset_from_model_dir(FLAGS.model_dir, FLAGS.preset_dir)}")


if __name__ == "__main__":
    cli.run(main, groups={"The weights": ["source", "checkpoint", "input_dir", "corpus_info",
                                          "vocab_pickle", "vocab_file", "dataset",
                                          "cluster_order", "same_length_semantics"],
                          "The model directory written": ["model_dir", "preset_dir",
                                                          *RUN_SETTINGS]},
            required=("source", "model_dir"))
