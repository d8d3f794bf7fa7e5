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
import dataclasses

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

from runners.cli import data_flags as flags_data  # noqa: E402
from runners.cli import model_flags as flags_model  # noqa: E402
from txl_tf.training import xla_clustering  # noqa: E402
from txl_tf.training.distribute import STRATEGIES  # noqa: E402
from txl_tf.training.options import PRECISIONS  # noqa: E402

# The no-flags default: a small model that learns the built-in corpus in a few CPU minutes.
SMALL_MODEL = dict(n_layer=4, d_model=128, n_head=4, d_head=32, d_inner=512, tgt_len=64,
                   mem_len=64, dropout=0.0, dropatt=0.0)


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Define every flag of train.py in `flag_values` (tests parse flagfiles into their own)."""
    fv = flag_values
    flags_model.define_model_flags(SMALL_MODEL, flag_values=fv)
    # Data.
    flags.DEFINE_string("data_dir", "data/builtin",
                        "Prepared data directory (runners/prepare_data.py).", flag_values=fv)
    flags.DEFINE_string("dataset", "builtin", "Corpus name (builtin, synthetic, enwik8, text8, "
                        "wt103, lm1b, text, ...). Not given: the one data_dir/corpus-info.json "
                        "records (builtin for a new data_dir).", flag_values=fv)
    flags.DEFINE_multi_string("corpus_option", [], "key=value corpus option (the same as the "
                              "corpus flags below, e.g. max_bytes=1000000 for builtin).",
                              flag_values=fv)
    flags.DEFINE_string("raw_path", None, "Raw corpus archive/file: make missing records from "
                        "it (instead of the download; for --dataset=text: the text file).",
                        flag_values=fv)
    flags.DEFINE_bool("download", True, "The chief downloads a missing corpus archive into "
                      "data_dir/raw (progress bar, checked) on first use.", flag_values=fv)
    # Corpus options, as runners/prepare_data.py; a prepared data_dir keeps its recorded ones.
    flags_data.define_corpus_flags(fv)
    flags.DEFINE_integer("per_host_train_bsz", 16, "Training streams per host (worker).",
                         flag_values=fv)
    flags.DEFINE_integer("train_batch_size", 0, "Global training batch (0: per_host_train_bsz "
                         "x hosts).", flag_values=fv)
    flags.DEFINE_integer("per_host_valid_bsz", 0, "Validation streams per host (0: as "
                         "training).", flag_values=fv)
    flags.DEFINE_integer("num_passes", 1, "Training records hold this many rotated copies of "
                         "the stream (the reference TPU recipes use 10).", flag_values=fv)
    # Optimisation.
    flags.DEFINE_float("learning_rate", 2e-3, "Peak learning rate.", flag_values=fv)
    flags.DEFINE_integer("warmup_steps", 50, "Linear warmup steps.", flag_values=fv)
    flags.DEFINE_integer("train_steps", 600, "Total training steps.", flag_values=fv)
    flags.DEFINE_float("min_lr_ratio", 0.004, "Final LR / peak LR of the cosine decay.",
                       flag_values=fv)
    flags.DEFINE_float("clip", 0.25, "Global-norm clip of the all-reduced gradient (<= 0: none).",
                       flag_values=fv)
    flags.DEFINE_integer("grad_accum_steps", 1, "Accumulate the gradients of this many chunks of "
                         "each replica's streams before one update (same result, less memory).",
                         flag_values=fv)
    flags.DEFINE_integer("max_per_replica_batch", 0, "Most streams a replica computes at once; "
                         "a larger per-replica batch raises --grad_accum_steps (same update). "
                         "0: estimated from the device memory (CPU RAM, GPU memory).",
                         flag_values=fv)
    flags.DEFINE_enum("precision", "float32", list(PRECISIONS), "Keras dtype policy; "
                      "mixed_float16 adds dynamic loss scaling.", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "Seed of the initialisation and dropout.", flag_values=fv)
    # Run.
    flags.DEFINE_string("model_dir", "runs/default", "Checkpoints, config, TensorBoard logs.",
                        flag_values=fv)
    flags.DEFINE_integer("steps_per_loop", 50, "Training steps per compiled loop.",
                         flag_values=fv)
    flags.DEFINE_integer("log_steps", 50, "Console line and training scalars every this many "
                         "steps.", flag_values=fv)
    flags.DEFINE_integer("save_steps", 200, "Checkpoint every this many steps (and at the end).",
                         flag_values=fv)
    flags.DEFINE_integer("eval_steps", 200, "Validate every this many steps (0: only at the "
                         "end).", flag_values=fv)
    flags.DEFINE_integer("max_eval_batches", 100, "Validation steps per evaluation (-1: whole "
                         "split).", flag_values=fv)
    flags.DEFINE_bool("checkpoint_memory", True, "Save each worker's memory with the "
                      "checkpoints so that a resumed run continues exactly; off: a resumed run "
                      "restarts the memory from zeros (saves disk for big models).",
                      flag_values=fv)
    flags.DEFINE_integer("keep_checkpoints", 5, "Training checkpoints kept (the best on "
                         "validation is kept apart in model_dir/best).", flag_values=fv)
    flags.DEFINE_string("init_checkpoint", None, "Warm start: model weights from this model "
                        "directory or checkpoint (ignored when model_dir already has a "
                        "checkpoint).", flag_values=fv)
    flags.DEFINE_enum("strategy", "default", list(STRATEGIES), "Distribution strategy. auto "
                      "(the recipes): a TPU if --tpu is given or one is attached, else all "
                      "local GPUs, else the CPU.", flag_values=fv)
    flags.DEFINE_string("tpu", None, "--strategy=tpu: 'local' (this TPU VM's own chips), a TPU "
                        "or pod slice name, or grpc://address.", flag_values=fv)
    flags.DEFINE_list("devices", [], "Devices for one_device/mirrored, e.g. /CPU:0,/CPU:1.",
                      flag_values=fv)
    flags.DEFINE_bool("xla_fusion", False, "CPU speed: XLA auto-clusters and fuses the "
                      "element-wise ops while TensorFlow's oneDNN kernels run the matrix "
                      "products (twice the float32 rate in mixed_bfloat16 on AVX512_BF16 CPUs); "
                      "see txl_tf/training/xla_clustering.py.", flag_values=fv)
    flags.DEFINE_integer("logical_cpus", 0, "Split the CPU into this many logical devices (e.g. "
                         "2 to try --strategy=mirrored --devices=/CPU:0,/CPU:1 without GPUs).",
                         flag_values=fv)


FLAGS = flags.FLAGS


def _option_value(text: str):
    """'3' -> 3, '0.5' -> 0.5, 'true'/'false' -> bool, anything else the string."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def options_from_flags(f):
    """(DataOptions, TrainOptions) of the parsed flags `f`."""
    from tf_records import DataOptions
    from txl_tf.training import TrainError, TrainOptions
    corpus_options = {}
    for item in f.corpus_option:
        if "=" not in item:
            raise TrainError(f"--corpus_option must be key=value, got {item!r}.")
        key, value = item.split("=", 1)
        corpus_options[key.strip()] = _option_value(value.strip())
    corpus_options.update(flags_data.corpus_options(f))
    data = DataOptions(data_dir=f.data_dir, dataset=f.dataset if f["dataset"].present else None,
                       corpus_options=corpus_options, raw_path=f.raw_path, download=f.download)
    names = [field.name for field in dataclasses.fields(TrainOptions)]
    values = {name: f[name].value for name in names if name in f}
    return data, TrainOptions(**dict(values, devices=tuple(f.devices),
                                     flags_text=f.flags_into_string()))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]} (flags are --name=value).")
    import tensorflow as tf
    if FLAGS.xla_fusion:
        xla_clustering.enable_elementwise_clustering()
    if FLAGS.logical_cpus > 1:
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * FLAGS.logical_cpus)
    from tf_records import PreparedData
    from txl_tf.memory_estimate import check_step_fits
    from txl_tf.training import train

    cli.check_directories(model_dir=FLAGS.model_dir, data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path)
    data_options, options = options_from_flags(FLAGS)

    def config_fn(n_token, cutoffs):
        config = flags_model.config_from_flags(FLAGS, n_token, cutoffs)
        # Refused before anything is written when even one stream cannot fit.
        check_step_fits(config, 1, training=True,
                        bytes_per_value=2 if FLAGS.precision.startswith("mixed") else 4)
        return config

    train(options, config_fn, PreparedData(data_options))


if __name__ == "__main__":
    define_flags()
    cli.run(main)
