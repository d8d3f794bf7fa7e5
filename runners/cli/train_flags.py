"""The flags of a training run: runners/train.py's, also taken by runners/tools/benchmark.py so
that a training flagfile works there unchanged.

`define_flags(flag_values)` defines them; `options_from_flags(flag_values)` builds the
`TrainOptions`; `model_flags.config_from_flags` builds the model config from the same flags.
"""
from absl import flags

from runners.cli import data_flags, model_flags
from txl_tf.training.distribute import STRATEGIES
from txl_tf.training.run import PRECISIONS, TrainError, TrainOptions


def _define_data_flags(fv: flags.FlagValues) -> None:
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
    data_flags.define_corpus_flags(fv)
    flags.DEFINE_integer("per_host_train_bsz", 16, "Training streams per host (worker).",
                         flag_values=fv)
    flags.DEFINE_integer("train_batch_size", 0, "Global training batch (0: per_host_train_bsz "
                         "x hosts).", flag_values=fv)
    flags.DEFINE_integer("per_host_valid_bsz", 0, "Validation streams per host (0: as "
                         "training).", flag_values=fv)
    flags.DEFINE_integer("num_passes", 1, "Training records hold this many rotated copies of "
                         "the stream (the reference TPU recipes use 10).", flag_values=fv)


def _define_optimisation_flags(fv: flags.FlagValues) -> None:
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


def _define_run_flags(fv: flags.FlagValues) -> None:
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


def _define_device_flags(fv: flags.FlagValues) -> None:
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


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Defines every flag of a training run in `flag_values` (tests parse flagfiles into their
    own); the model's no-flags default is `model_flags.SMALL_MODEL`."""
    model_flags.define_model_flags(flag_values, defaults=model_flags.SMALL_MODEL)
    _define_data_flags(flag_values)
    _define_optimisation_flags(flag_values)
    _define_run_flags(flag_values)
    _define_device_flags(flag_values)


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


def corpus_options_from_flags(f: flags.FlagValues) -> dict:
    """The corpus options given by `--corpus_option=key=value` and the corpus flags."""
    corpus_options = {}
    for item in f.corpus_option:
        if "=" not in item:
            raise TrainError(f"--corpus_option must be key=value, got {item!r}.")
        key, value = item.split("=", 1)
        corpus_options[key.strip()] = _option_value(value.strip())
    corpus_options.update(data_flags.corpus_options(f))
    return corpus_options


def options_from_flags(f: flags.FlagValues) -> TrainOptions:
    """The `TrainOptions` of the parsed flags of `define_flags`."""
    return TrainOptions(
        model_dir=f.model_dir, data_dir=f.data_dir,
        dataset=f.dataset if f["dataset"].present else None,
        corpus_options=corpus_options_from_flags(f), raw_path=f.raw_path, download=f.download,
        per_host_train_bsz=f.per_host_train_bsz, train_batch_size=f.train_batch_size,
        per_host_valid_bsz=f.per_host_valid_bsz, num_passes=f.num_passes,
        learning_rate=f.learning_rate,
        warmup_steps=f.warmup_steps, train_steps=f.train_steps, min_lr_ratio=f.min_lr_ratio,
        clip=f.clip, grad_accum_steps=f.grad_accum_steps,
        max_per_replica_batch=f.max_per_replica_batch, precision=f.precision,
        steps_per_loop=f.steps_per_loop, log_steps=f.log_steps, save_steps=f.save_steps,
        eval_steps=f.eval_steps, max_eval_batches=f.max_eval_batches,
        keep_checkpoints=f.keep_checkpoints, checkpoint_memory=f.checkpoint_memory,
        init_checkpoint=f.init_checkpoint,
        strategy=f.strategy, tpu=f.tpu, devices=tuple(f.devices), seed=f.seed,
        flags_text=f.flags_into_string())
