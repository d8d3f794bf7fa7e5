r"""Import released Transformer-XL weights into a txl-tf model directory.

  python runners/import_weights.py --source=tf1 --checkpoint=tf_wt103/model/model.ckpt-0 \
      --corpus_info=tf_wt103/data/corpus-info.json --vocab_pickle=tf_wt103/data/cache.pkl \
      --model_dir=models/wt103-imported --tgt_len=128 --mem_len=1600 --clamp_len=1000 --same_length
  python runners/import_weights.py --source=huggingface --input_dir=transfo-xl-wt103 \
      --model_dir=models/wt103-hf  # config.json + model.safetensors, tf_model.h5 or .bin

--preset_dir also writes a Keras preset of the result (`txl_tf.causal_lm.presets`).

The flags are `ImportOptions` (txl_tf/commands/import_weights_options.py); the import is one call,
`import_into_model_dir` (txl_tf/commands/import_weights.py): txl_tf/convert infers the
configuration (run settings from the flags when given) and maps the weights; tf_records reads
the vocabulary pickle without running code from it and writes vocab.txt and corpus-info.json
(`ReleasedVocabulary`). `txl_tf.load_model(model_dir)` and every runner read the result.
"""
from absl import app, flags

from runners import cli
from runners.cli import dataclass_flags
from tf_records.vocab.released import ReleasedVocabulary
from txl_tf.commands.import_weights_options import (CLUSTER_ORDERS, RUN_SETTINGS,
                                                    SAME_LENGTH_SEMANTICS, SOURCES,
                                                    ImportOptions, checked)

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS) -> dict:
    """Defines the flags of this runner into `fv` (called only when it runs as a program, so
    that its functions can be imported beside other runners); returns the groups of --help."""
    names = dataclass_flags.define_flags(
        ImportOptions, fv, enums={"source": SOURCES, "cluster_order": CLUSTER_ORDERS,
                                  "same_length_semantics": SAME_LENGTH_SEMANTICS})
    written = ["model_dir", "preset_dir", *RUN_SETTINGS]
    return {"The weights": [n for n in names if n not in written],
            "The model directory written": written}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = checked(dataclass_flags.options_from_flags(ImportOptions, FLAGS))
    cli.check_directories(model_dir=options.model_dir, preset_dir=options.preset_dir)
    cli.check_files(corpus_info=options.corpus_info, vocab_pickle=options.vocab_pickle,
                    vocab_file=options.vocab_file)
    with cli.locked(options.model_dir):  # one import into a directory at a time
        vocabulary = ReleasedVocabulary.read(options.vocab_pickle, options.vocab_file)
        cli.quiet_start()
        # TensorFlow loads here, after the flags were checked: --help and usage errors come
        # at once.
        from txl_tf.commands.import_weights import import_into_model_dir
        report(import_into_model_dir(options, vocabulary), with_vocabulary=bool(vocabulary))


def report(imported, with_vocabulary):
    """What the import wrote, on stdout."""
    model, c = imported.model, imported.model.config
    print(f"imported {imported.report['source']} weights: {len(model.weights)} variables, "
          f"n_layer {c.n_layer}, d_model {c.d_model}, n_token {c.n_token}, cutoffs "
          f"{list(c.cutoffs)}, div_val {c.div_val}, untie_r {c.untie_r}, proj_same_dim "
          f"{c.proj_same_dim}, proj_share_all_but_first {c.proj_share_all_but_first}")
    if imported.report.get("ignored"):
        print(f"ignored source variables: {sorted(imported.report['ignored'])}")
    print(f"wrote {imported.checkpoint}" + (
        " and vocab.txt, corpus-info.json" if with_vocabulary
        else " (no vocabulary given: pass --vocab_pickle or --vocab_file)"))
    if imported.preset:
        print(f"wrote the preset {imported.preset}")


if __name__ == "__main__":
    cli.run(main, groups=define_flags(), required=("source", "model_dir"))
