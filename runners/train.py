"""Train Transformer-XL: `python runners/train.py [--flagfile=runners/enwik8.flags] [flags]`.

With no flags at all it trains a small model on the built-in corpus (the bytes of Python's
standard library) in a few minutes on CPU, and prints where the TensorBoard logs are. The same
code runs on one CPU, several GPUs (`--strategy=mirrored`), several machines
(`--strategy=multi_worker_mirrored`, cluster in TF_CONFIG) or a TPU (`--strategy=tpu --tpu=...`);
the recipes' `--strategy=auto` takes a TPU when `--tpu` is given or one is attached, else this
machine's GPUs or CPU, and says which in one line.

Data: `--data_dir` prepared by runners/prepare_data.py is used with the dataset and corpus options
its corpus-info.json records (give an option only to change it); missing records are made by
the chief, downloading the corpus on first use (`--raw_path` for a file already on disk). A
--data_dir not yet prepared, other than the default, needs --dataset (which corpus to make
there): a mistyped path is refused in one line naming the nearest prepared directory.

Unknown flags, also in flagfiles, are errors. A restarted run with the same flags and --model_dir
resumes from the last checkpoint: same weights, optimizer state, data position and memory.
"""
from absl import app, flags

from runners import cli
from runners.cli import dataclass_flags
from runners.cli.model_flags import template_from_flags
from runners.cli.train_flags import define_flags, options_from_flags, set_up_devices
from tf_records import DataOptions, PreparedData

FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]} (flags are --name=value).")
    cli.check_directories(model_dir=FLAGS.model_dir, data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path)
    cli.check_data_dir(FLAGS.data_dir, dataclass_flags.given(FLAGS, "dataset"),
                       DataOptions.data_dir, model_dir=FLAGS.model_dir)
    data_options, options = options_from_flags(FLAGS)
    template = template_from_flags(FLAGS)
    cli.quiet_start()
    set_up_devices()
    from txl_tf.commands.train import train  # TensorFlow loads after the flags were checked
    chief = cli.is_chief_process()  # non-chief workers share the chief's directories
    with cli.locked(FLAGS.model_dir if chief else None), \
            cli.locked(FLAGS.data_dir if chief else None, exclusive=False):
        train(options, template, PreparedData(data_options))


if __name__ == "__main__":
    cli.run(main, groups=define_flags())
