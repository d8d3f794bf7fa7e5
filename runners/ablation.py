"""The paper's ablation (Table 6) at CPU scale: `python runners/ablation.py --preset=synthetic`.

Trains the variants of txl_tf/ablation/variants.py (encoding x recurrence x full/half loss) on
the same data with the same sizes, steps and seed into --root/<variant>, evaluates each on the
valid split at 1x, 2x, 4x its training attention length, prints one JSON line per variant and
a table shaped like Table 6. A variant already trained to --train_steps is only evaluated.
`tensorboard --logdir ROOT` overlays the variants' training and validation curves and their
loss against the evaluation attention length (ROOT/<variant>/eval-attn, x = attention length).
ROOT/<variant>/flags.txt is a train.py flagfile of that variant's run.

Presets set train.py's flags (model, data, schedule); every train.py flag given on the command
line or in a flagfile wins over the preset:
  --preset=synthetic  the synthetic long-range corpus (period 48 > tgt_len 32: only context
                      beyond the segment predicts the repeats), a 2-layer d_model 64 model;
  --preset=builtin    the built-in corpus (bytes of Python's standard library), train.py's
                      no-flags model;
  --preset=none       train.py's own defaults.
The defaults --help shows are the default preset's (synthetic), the values it trains with.
train.py's --model_dir (each variant trains into --root/<variant>), --attn_type and
--half_loss (each variant sets them) are not taken: refused, and not in --help.
"""
import dataclasses

from absl import app, flags

from runners import cli
from runners.cli import dataclass_flags
from runners.cli.model_flags import template_from_flags
from runners.cli.train_flags import define_flags, options_from_flags, set_up_devices
from tf_records import DataOptions, PreparedData
from txl_tf.commands.ablation_options import AblationOptions
from txl_tf.model.attention_variants import ATTENTION_VARIANTS

FLAGS = flags.FLAGS

_SHARED = dict(dropout=0.0, dropatt=0.0, steps_per_loop=100, log_steps=500, save_steps=2000,
               eval_steps=2000, max_eval_batches=-1)
PRESETS = {
    "synthetic": dict(
        _SHARED, dataset="synthetic", data_dir="data/ablation-synthetic",
        root="runs/ablation-synthetic", num_symbols=16, period=48, repeats=3,
        train_tokens=2_000_000, eval_tokens=20_000, n_layer=2, d_model=64, n_head=4,
        d_head=16, d_inner=128, tgt_len=32, mem_len=32, per_host_train_bsz=16,
        learning_rate=1e-3, warmup_steps=100, train_steps=10_000),
    "builtin": dict(
        _SHARED, dataset="builtin", data_dir="data/builtin", root="runs/ablation-builtin",
        n_layer=4, d_model=128, n_head=4, d_head=32, d_inner=512, tgt_len=64, mem_len=64,
        per_host_train_bsz=16, learning_rate=2e-3, warmup_steps=100, train_steps=4000,
        max_eval_batches=100, max_eval_tokens=200_000),
    "none": {},
}


DEFAULT_PRESET = "synthetic"
VARIANT_FLAGS = ("attn_type", "half_loss")  # what each variant sets for itself
# train.py's flags that the experiment does not take: refused, and not in --help.
REFUSED_FLAGS = {
    "model_dir": "is not taken: each variant trains into --root/<variant> (give --root)",
    **{name: "is set by each variant (--variants picks them: {encodings}; -half = the half "
             "loss)" for name in VARIANT_FLAGS},
}
ENCODING_NAMES = ", ".join(f"{v.name} = attn_type {v.attn_type}" for v in ATTENTION_VARIANTS)
_PRESET_FLAGS = sorted({name for preset in PRESETS.values() for name in preset})


def define_ablation_flags(fv=flags.FLAGS) -> dict:
    """train.py's flags, the experiment's (`AblationOptions`) and --preset; returns the groups
    of `--help`. The defaults shown (and used) are those of the default preset."""
    groups = define_flags(fv)
    experiment = dataclass_flags.define_flags(AblationOptions, fv,
                                              enums={"split": ("train", "valid", "test")})
    flags.DEFINE_enum("preset", DEFAULT_PRESET, list(PRESETS), "Flag values of an experiment "
                      "(see the module docstring); flags given explicitly win.", flag_values=fv)
    for name in _PRESET_FLAGS:  # the definitions' own defaults, for the other presets
        fv[name].own_default = fv[name].default
    for name, value in PRESETS[DEFAULT_PRESET].items():
        fv.set_default(name, value)
    return {"Ablation": ["preset", *experiment], **groups}


def apply_preset(fv=flags.FLAGS) -> None:
    """Sets the preset's value of every flag not given on the command line or in a flagfile
    (they then count as given: a preset's --dataset, say, is checked against --data_dir); a
    flag another preset sets gets its definition's own default."""
    preset = PRESETS[fv.preset]
    for name in _PRESET_FLAGS:
        if dataclass_flags.given(fv, name):
            continue
        if name in preset:
            fv[name].value = preset[name]
            fv[name].present = 1
        else:
            fv[name].value = fv[name].own_default


def refuse_flags(fv=flags.FLAGS) -> None:
    """A usage error for a train.py flag the experiment does not take (`REFUSED_FLAGS`)."""
    for name, why in REFUSED_FLAGS.items():
        if dataclass_flags.given(fv, name):
            raise app.UsageError(f"--{name} {why.format(encodings=ENCODING_NAMES)}; drop "
                                 f"--{name}.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]} (flags are --name=value).")
    apply_preset()
    refuse_flags()
    cli.check_directories(root=FLAGS.root, data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path)
    cli.check_data_dir(FLAGS.data_dir, dataclass_flags.given(FLAGS, "dataset"),
                       DataOptions.data_dir)
    data_options, train_options = options_from_flags(FLAGS)
    options = dataclass_flags.options_from_flags(AblationOptions, FLAGS)
    own = tuple(f"--{name}=" for name in [*AblationOptions.__dataclass_fields__, "preset"])
    flags_text = "".join(line + "\n" for line in train_options.flags_text.splitlines()
                         if not line.startswith(own))  # train.py's flags only
    train_options = dataclasses.replace(train_options, flags_text=flags_text)
    template = template_from_flags(FLAGS)
    cli.quiet_start()
    set_up_devices()
    # TensorFlow loads here, after the flags were checked
    from txl_tf.commands.ablation import run_ablation
    with cli.locked(FLAGS.root), cli.locked(FLAGS.data_dir, exclusive=False):
        run_ablation(options, train_options, template, PreparedData(data_options))


if __name__ == "__main__":
    cli.run(main, groups=define_ablation_flags(), hidden=tuple(REFUSED_FLAGS))
