"""The flags of a training run: runners/train.py's, also taken by runners/tools/benchmark.py so
that a training flagfile works there unchanged.

The flags are generated from the model config (`model_flags`, with train.py's no-flags preset
`model_flags.SMALL_MODEL`), `tf_records.DataOptions` and `txl_tf.commands.TrainOptions`: their
defaults and help are written once, in those classes. Added here: `--corpus_option` and the
corpus flags (the `corpus_options` field), and two process settings (`--xla_fusion`,
`--logical_cpus`) that the runner applies before training. The model flags give the run's
`ConfigTemplate` (`model_flags.template_from_flags`): its vocabulary is the data's.
"""
from absl import flags

from runners.cli import data_flags, dataclass_flags, flag_ranges, model_flags
from tf_records import DataOptions
from txl_tf.commands.train_options import (JIT_COMPILE, PRECISIONS, STRATEGIES, TrainError,
                                     TrainOptions)

_DATA_SKIP = ("corpus_options",)  # from --corpus_option and the corpus flags
_TRAIN_SKIP = ("flags_text",)  # the parsed flags themselves


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> dict:
    """Defines every flag of a training run in `flag_values` (tests parse flagfiles into their
    own); returns the groups of `--help`: {"Model": names, "Training": ..., "Data": ...} (the
    process settings are the command's own)."""
    fv = flag_values
    model = model_flags.define_model_flags(fv, defaults=model_flags.SMALL_MODEL)
    data = dataclass_flags.define_flags(DataOptions, fv, skip=_DATA_SKIP)
    flags.DEFINE_multi_string("corpus_option", [], "key=value corpus option (the same as the "
                              "corpus flags below, e.g. max_bytes=1000000 for builtin).",
                              flag_values=fv)
    # Corpus options, as runners/prepare_data.py; a prepared data_dir keeps its recorded ones.
    data += ["corpus_option", *data_flags.define_corpus_flags(fv)]
    training = dataclass_flags.define_flags(TrainOptions, fv, skip=_TRAIN_SKIP,
                                            enums={"precision": PRECISIONS,
                                                   "strategy": STRATEGIES,
                                                   "jit_compile": JIT_COMPILE})
    flags.DEFINE_bool("xla_fusion", False, "CPU speed: XLA auto-clusters and fuses the "
                      "element-wise ops while TensorFlow's oneDNN kernels run the matrix "
                      "products (twice the float32 rate in mixed_bfloat16 on AVX512_BF16 CPUs); "
                      "see txl_tf/training/xla_clustering.py.", flag_values=fv)
    flag_ranges.define_integer(
        "logical_cpus", 0, "Split the CPU into this many logical devices (e.g. 2 to try "
        "--strategy=mirrored --devices=/CPU:0,/CPU:1 without GPUs).",
        (0, 1024, "0 or 1: one device"), flag_values=fv)
    return {"Model": model, "Training": training, "Data": data}


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


def options_from_flags(f: flags.FlagValues):
    """(DataOptions, TrainOptions) of the parsed flags of `define_flags`; `--dataset` not given
    is None: the one the data directory records."""
    data = dataclass_flags.options_from_flags(
        DataOptions, f, skip=_DATA_SKIP,
        dataset=f.dataset if dataclass_flags.given(f, "dataset") else None,
        corpus_options=corpus_options_from_flags(f))
    options = dataclass_flags.options_from_flags(TrainOptions, f, skip=_TRAIN_SKIP,
                                                 flags_text=f.flags_into_string())
    return data, options


def set_up_devices(f: flags.FlagValues = flags.FLAGS) -> None:
    """Applies the process settings --xla_fusion and --logical_cpus (before any device use)."""
    # TensorFlow is imported here, when a run starts, not with the flags: --help and usage
    # errors do not wait for it (see runners/cli/__init__.py).
    import tensorflow as tf
    from txl_tf.training import xla_clustering
    if f.xla_fusion:
        xla_clustering.enable_elementwise_clustering()
    if f.logical_cpus > 1:
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * f.logical_cpus)
