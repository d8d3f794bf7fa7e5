r"""What txl-tf does on the devices of this machine, in one command and one folder.

Within `--budget_seconds` (every part has its own deadline; the report lists what it skipped
and why), on the first GPU (else the CPU):
  1. the matmul rate in float32 and bfloat16 (`txl_tf/training/measurement/matmul_rate.py`; PyTorch's on
     the same device as the cross-check where `import torch` works);
  2. each paper recipe (runners/enwik8.flags, enwik8_base.flags, wt103_base.flags) for a few
     dozen steps of train.py's step (`Trainer.train`, the benchmark's `Steps`) in float32 and
     mixed_bfloat16, on random tokens of the recipe's vocabulary (a stand-in corpus): compile
     seconds, seconds per step, tokens/s, MFU against the measured rate, the allocator's peak
     memory against the accumulation chooser's estimate, the FLOP estimate of the step
     against the measured one; the replica recipe on one replica and on two (two GPUs, one GPU
     split in two logical GPUs, or two logical CPUs), losses side by side;
  3. the NVIDIA WT103 base shape against the Hugging Face TransfoXL peer on the same device,
     interleaved, when this Python imports `transformers` and `torch`;
  4. a profile of the profile recipe's step in both precisions (profiles.tar.gz:
     TensorBoard's profile plugin opens each folder in it).
Writes report.md (one table) and report.json (every figure) into `--out_dir`, after every part,
and profiles.tar.gz: at most 3 files, none past 16 MiB.

  python runners/tools/accelerator_report.py --out_dir=/tmp/report             # 8 minutes
  python runners/tools/accelerator_report.py --out_dir=/tmp/smoke --smoke       # tiny shapes
On a GPU machine with the kit (docs/performance.md, "On a GPU"; runners/tools/gpu_report.sh):
  export TXL_GPU_HF=1; . .gpu-kit/bin/activate.sh && \
      python3 runners/tools/accelerator_report.py --out_dir=$OUT/report --budget_seconds=480
Any training flag given on the command line applies to every run after the recipe's flagfile
(e.g. --jit_compile=false, --max_per_replica_batch=8).
"""
import os
import shlex
import sys

from runners import cli

cli.quiet_start()

from absl import app, flags  # noqa: E402

# train.py's flags and the benchmark's (a recipe's flagfile sets them for each run)
from runners.tools.benchmarks.configuration import FLAGS  # noqa: E402
from runners.tools.benchmarks.accelerator_report import output, recipes  # noqa: E402
from runners.tools.benchmarks.accelerator_report.schedule import (  # noqa: E402
    ReportOptions, run_report, set_up_devices)

REPORT_FLAGS = ("out_dir", "budget_seconds", "smoke", "report_recipes", "replica_recipe",
                "profile_recipe", "report_max_steps", "report_part", "report_float32_rate")

flags.DEFINE_string("out_dir", None, "The report's folder (new, or holding an earlier report).")
flags.DEFINE_float("budget_seconds", 480.0, "Time budget of the whole report, seconds.")
flags.DEFINE_bool("smoke", False, "Tiny shapes: a check of the report itself (a CPU: well under "
                  "a minute).")
flags.DEFINE_list("report_recipes", list(recipes.RECIPES),
                  "Recipes (runners/<name>.flags) run in both precisions.")
flags.DEFINE_string("replica_recipe", "enwik8_base", "Recipe run on one and on two replicas.")
flags.DEFINE_string("profile_recipe", "wt103_base", "Recipe whose step is profiled.")
flags.DEFINE_integer("report_max_steps", 30, "Timed steps of a run at most (after the first).")
flags.DEFINE_enum("report_part", None, ["replicas"],
                  "Internal: run only this part (the child process that splits one GPU).")
flags.DEFINE_float("report_float32_rate", None,
                   "Internal: the float32 matmul rate (FLOP/s) the parent measured, for the "
                   "child's MFU and estimates.")


def options_from_flags(argv):
    """The `ReportOptions` of the flags; `app.UsageError` (one line) for a bad value."""
    if FLAGS.budget_seconds <= 0:
        raise app.UsageError(f"--budget_seconds={FLAGS.budget_seconds:g} must be positive.")
    if FLAGS.report_max_steps < 1:
        raise app.UsageError(f"--report_max_steps={FLAGS.report_max_steps} must be at least 1.")
    if not FLAGS.report_recipes:
        raise app.UsageError("--report_recipes is empty: name at least one recipe, e.g. "
                             f"--report_recipes={','.join(recipes.RECIPES)}.")
    for flag in ("report_recipes", "replica_recipe", "profile_recipe"):
        names = FLAGS[flag].value if flag == "report_recipes" else [FLAGS[flag].value]
        for name in names:
            try:
                recipes.check_recipe(name)
            except recipes.RecipeError as error:
                raise app.UsageError(f"--{flag}: {error}")
    overrides = tuple(FLAGS[name].serialize() for name in FLAGS
                      if FLAGS[name].present and name not in REPORT_FLAGS
                      and name not in ("flagfile", "verbosity", "logtostderr"))
    child = FLAGS.report_part == "replicas"
    return ReportOptions(
        out_dir=FLAGS.out_dir, budget_seconds=FLAGS.budget_seconds, smoke=FLAGS.smoke,
        recipes=tuple(FLAGS.report_recipes), replica_recipe=FLAGS.replica_recipe,
        profile_recipe=FLAGS.profile_recipe, max_steps=FLAGS.report_max_steps,
        overrides=overrides, in_child=child, float32_rate=FLAGS.report_float32_rate,
        parts=("replicas",) if child else ("rates", "replicas", "peer", "recipes"),
        command=" ".join(shlex.quote(a) for a in [os.path.basename(sys.executable)] + argv))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = options_from_flags(sys.argv)
    try:
        output.check_out_dir(options.out_dir)
    except output.OutDirError as error:
        raise app.UsageError(str(error))
    set_up_devices(split=options.in_child)
    record = run_report(options)
    print(f"report: {os.path.join(options.out_dir, output.REPORT_MD)} "
          f"({len(record['runs'])} runs, {len(record['budget']['skipped'])} skipped, "
          f"{record['budget']['elapsed_seconds']:.0f} s)")


if __name__ == "__main__":
    cli.run(main, required=("out_dir",))
