"""Train Transformer-XL: `python runners/train.py [--flagfile=runners/enwik8.flags] [flags]`.

With no flags at all it trains a small model on the built-in corpus (the bytes of Python's
standard library) in a few minutes on CPU, and prints where the TensorBoard logs are. The same
code runs on one CPU, several GPUs (`--strategy=mirrored`), several machines
(`--strategy=multi_worker_mirrored`, cluster in TF_CONFIG) or a TPU (`--strategy=tpu --tpu=...`);
the recipes' `--strategy=auto` takes a TPU when `--tpu` is given or one is attached, else this
machine's GPUs or CPU, and says which in one line.

Data: `--data_dir` prepared by runners/prepare_data.py is used with the dataset and corpus options
its corpus-info.json records (give an option only to change it); missing records are made by
the chief, downloading the corpus on first use (`--raw_path` for a file already on disk).

Unknown flags, also in flagfiles, are errors. A restarted run with the same flags and --model_dir
resumes from the last checkpoint: same weights, optimizer state, data position and memory.
"""
from runners import cli

cli.quiet_start()

from absl import app, flags  # noqa: E402

from runners.cli import train_flags  # noqa: E402
from runners.cli.train_flags import (config_fn, define_flags, options_from_flags,  # noqa: E402,F401
                                     set_up_devices)
from tf_records import PreparedData  # noqa: E402
from txl_tf.training import train  # noqa: E402

FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]} (flags are --name=value).")
    set_up_devices()
    cli.check_directories(model_dir=FLAGS.model_dir, data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path)
    data_options, options = options_from_flags(FLAGS)
    chief = cli.is_chief_process()  # non-chief workers share the chief's directories
    with cli.locked(FLAGS.model_dir if chief else None), \
            cli.locked(FLAGS.data_dir if chief else None, exclusive=False):
        train(options, config_fn(), PreparedData(data_options))


if __name__ == "__main__":
    define_flags()
    for _name in train_flags.key_flags():  # --helpshort lists them as train.py's
        flags.declare_key_flag(_name)
    cli.run(main)
