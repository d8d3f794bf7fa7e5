"""`run_report`: the report's parts in order, each against its own deadline (budget.py), the
two reports rewritten after each part (output.py).

Parts, in the order they run, and their shares of the budget (`SHARES`):
  rates     the matmul rate, float32 and bfloat16 (TensorFlow; PyTorch where it imports);
  replicas  the replica recipe (dropout 0, so that the losses are comparable) on one replica
            and on two: two devices when there are two (on a CPU, the two logical CPUs the
            report sets up), else a child process that splits the one GPU in two;
  peer      the Hugging Face peer on the NVIDIA WT103 base shape, both precisions;
  recipes   each recipe in float32 and mixed_bfloat16 on one device, the profile recipe's runs
            profiled (its compilation is the run's).
The time a part leaves unused goes to the next. On one GPU the parts that share the card with
another process (the replicas child, the peer's PyTorch) come before the recipes: TensorFlow's
allocator grows as the runs need (memory growth) and does not give memory back.
"""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Optional, Tuple

import tensorflow as tf
from absl import app
from google.protobuf.message import DecodeError

from runners.tools.benchmarks import report as bench_report
from runners.tools.benchmarks.accelerator_report import output, peer, rates as rate_part
from runners.tools.benchmarks.accelerator_report import recipes
from runners.tools.benchmarks.accelerator_report.budget import Budget, too_late
from runners.tools.benchmarks.configuration import TOOLS_DIR
from txl_tf.runtime.error_text import first_line
from txl_tf.training import batch_fit
from txl_tf.training.measurement import profile_summary
from txl_tf.training.measurement.matmul_rate import MatmulRate

ENTRY_POINT = os.path.join(TOOLS_DIR, "accelerator_report.py")
SHARES = {"rates": 0.06, "replicas": 0.16, "peer": 0.22, "recipes": 0.52}
PROFILED_STEPS = 2
LOGICAL_GPU_SHARE = 0.45  # of the card's memory for each of two logical GPUs


@dataclasses.dataclass
class ReportOptions:
    """What one report measures.

    Attributes:
      out_dir: the report's folder (new, or holding only an earlier report).
      budget_seconds: the whole run's time budget.
      smoke: tiny shapes (a check of the report itself, e.g. on a CPU).
      recipes: the recipes run in both precisions (names of runners/<name>.flags).
      replica_recipe: the recipe run on one and on two replicas.
      profile_recipe: the recipe whose runs are profiled.
      max_steps: timed steps of a run at most (after the compiling first).
      overrides: serialised flags applied to every run after the recipe's (the command line's).
      parts: the parts to run (the replicas child: "replicas").
      in_child: this is the replicas child (it never starts another).
      float32_rate: the float32 matmul rate the parent measured (FLOP/s; the child's runs are
        judged against it instead of measuring it again).
      command: the command line, for the report.
    """
    out_dir: str
    budget_seconds: float = 480.0
    smoke: bool = False
    recipes: Tuple[str, ...] = recipes.RECIPES
    replica_recipe: str = "enwik8_base"
    profile_recipe: str = "wt103_base"
    max_steps: int = 30
    overrides: Tuple[str, ...] = ()
    parts: Tuple[str, ...] = tuple(SHARES)
    in_child: bool = False
    float32_rate: Optional[float] = None
    command: str = ""


def set_up_devices(split: bool) -> None:
    """Before TensorFlow's first use. Without a GPU: two logical CPUs (the replicas part's two
    devices). With `split` (the replicas child) and one GPU: two logical GPUs of
    `LOGICAL_GPU_SHARE` of its memory each. Otherwise the GPUs' memory grows as the runs need
    it, leaving the rest to the processes that share the card (PyTorch's rate, the peer, the
    replicas child)."""
    gpus = tf.config.list_physical_devices("GPU")
    try:
        if not gpus:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        elif split and len(gpus) == 1 and batch_fit.gpu_memory_bytes():
            limit = int(LOGICAL_GPU_SHARE * batch_fit.gpu_memory_bytes() / 2**20)
            tf.config.set_logical_device_configuration(
                gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * 2)
        else:
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
    except (RuntimeError, ValueError):  # TensorFlow was initialised already: as it is
        pass


def machine():
    """The device the runs use: kind, name, logical and physical counts, versions."""
    kind = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    physical = tf.config.list_physical_devices(kind)
    name = bench_report.versions()["cpu"]
    if kind == "GPU":
        name = tf.config.experimental.get_device_details(physical[0]).get("device_name", "GPU")
    return dict(bench_report.versions(), kind=kind, device=name,
                logical_devices=len(tf.config.list_logical_devices(kind)),
                physical_devices=len(physical))


def _dev(m, index):
    return f"/{m['kind']}:{index}"


def _rates(part, record, options):
    m = record["machine"]
    reason = too_late(part, 1.0)
    if reason:
        part.skip("matmul rates", reason)
        return {}
    devices = [_dev(m, i) for i in range(m["logical_devices"])]
    measured = rate_part.tensorflow_rates(_dev(m, 0), devices, 128 if options.smoke else None)
    record["rates"] = {"tensorflow": rate_part.as_record(measured), "torch": None}
    if part.left() <= 0:
        part.skip("PyTorch cross-check", "the part's deadline passed")
        return measured
    try:
        torch_rates = rate_part.torch_rates({p: r.size for p, r in measured.items()},
                                            m["kind"] == "GPU", 2 if options.smoke else 8,
                                            timeout=max(part.left(), 10.0) + 30.0)
    except RuntimeError as error:
        torch_rates = None
        part.skip("PyTorch cross-check", f"failed: {first_line(error)}")
    else:
        if torch_rates is None:
            part.skip("PyTorch cross-check", "torch is not importable in this Python")
    record["rates"]["torch"] = torch_rates
    return measured


@dataclasses.dataclass(frozen=True)
class RunDevices:
    """Where a recipe runs (`recipes.run_recipe`'s devices, rate and physical_devices).

    Attributes:
      devices: the replicas' devices.
      rate: the matmul rate (FLOP/s) of one device in the run's precision, or None.
      physical: the physical devices behind `devices`.
    """
    devices: list
    rate: Optional[float]
    physical: int = 1


def _run(part, record, name, deadline, options, where: RunDevices, profile=None):
    """One run into record["runs"]; a failure (e.g. out of memory) is listed, not raised."""
    try:
        run = recipes.run_recipe(name, deadline, 2 if options.smoke else options.max_steps,
                                 where.devices, where.rate, where.physical, profile)
    except (tf.errors.OpError, ValueError, RuntimeError, MemoryError) as error:
        part.skip(name, f"failed: {type(error).__name__}: {first_line(error)}")
        return None
    if run.get("cut"):
        part.skip(f"{name}: steps", f"{run['steps_timed']} of "
                  f"{2 if options.smoke else options.max_steps} timed steps before its deadline")
    if isinstance(run.get("profiled_steps"), str):
        part.skip(f"{name}: profile", run["profiled_steps"])
    record["runs"].append(run)
    return run


def _recipes(part, record, options, measured, work):
    m = record["machine"]
    order = sorted(options.recipes, key=lambda r: r != options.profile_recipe)
    todo = [(r, p) for r in order for p in rate_part.PRECISIONS]
    logdirs, top_ops = {}, {}
    for i, (recipe, precision) in enumerate(todo):
        name = f"{recipe} {precision}"
        if part.left() <= 0:
            part.skip(name, "the recipes part's deadline passed")
            continue
        deadline = part.slot(len(todo) - i)
        source = recipes.apply_recipe(recipe, precision, options.overrides, options.smoke)
        profile = None
        if recipe == options.profile_recipe:
            logdirs[precision] = os.path.join(work, f"profile-{precision}")
            profile = (logdirs[precision], PROFILED_STEPS, part.deadline)
        where = RunDevices([_dev(m, 0)], recipes.precision_rate(measured, precision))
        run = _run(part, record, name, deadline, options, where, profile=profile)
        if run is not None:
            run["data"] = source
        if profile is not None:  # packed at once: a run stopped later keeps the profiles
            top_ops[precision] = _top_op_types(logdirs[precision])
            record["profiles"] = dict(output.pack_profiles(logdirs, options.out_dir, work),
                                      recipe=options.profile_recipe, top_op_types_ms=top_ops)
        output.write(record, options.out_dir)


def _top_op_types(logdir, top=12):
    """[[op type or XLA instruction kind, self milliseconds]] of the host's threads in the
    newest trace under logdir (`txl_tf/training/measurement/profile_summary.py`); [] without one."""
    try:
        _, by_type = profile_summary.self_times(profile_summary.read_newest_trace(logdir))
    except (OSError, ValueError, DecodeError):  # no trace written, or one that does not parse
        return []
    return [[name, ms] for name, ms in by_type.most_common(top)]


def _replicas(part, record, options, measured, work):
    m = record["machine"]
    name = f"{options.replica_recipe} float32"
    if part.left() <= 0:
        part.skip("one and two replicas", "the replicas part's deadline passed")
        return None
    if m["logical_devices"] < 2:
        if options.in_child:
            part.skip("two replicas", f"one {m['kind']} could not be split in two logical "
                      "devices (its memory is unknown, or TensorFlow had started)")
            return None
        return _replicas_child(part, record, options, measured, work)
    overrides = tuple(options.overrides) + ("--dropout=0", "--dropatt=0")
    rate = recipes.precision_rate(measured, "float32")
    physical = min(2, m["physical_devices"])
    recipes.apply_recipe(options.replica_recipe, "float32", overrides, options.smoke)
    one = _run(part, record, f"{name}, 1 replica, dropout 0", part.slot(2), options,
               RunDevices([_dev(m, 0)], rate))
    if one is None or not one["steps_timed"]:
        part.skip("two replicas", "the one-replica run gave no timed step to compare with")
        return None
    if part.left() <= 0:
        part.skip("two replicas", "the replicas part's deadline passed after one replica")
        return None
    steps = one["steps_timed"]
    recipes.apply_recipe(options.replica_recipe, "float32", overrides, options.smoke)
    two = _run(part, record, f"{name}, 2 replicas ({_dev(m, 0)}, {_dev(m, 1)}), dropout 0",
               part.deadline, dataclasses.replace(options, max_steps=steps),
               RunDevices([_dev(m, 0), _dev(m, 1)], rate, physical))
    if two is None:
        return None
    pairs = list(zip(one["losses"], two["losses"]))
    record["replicas"] = {
        "recipe": options.replica_recipe, "devices": [_dev(m, 0), _dev(m, 1)],
        "physical_devices": physical, "steps_compared": len(pairs),
        "losses_one": one["losses"], "losses_two": two["losses"],
        "max_abs_loss_difference": max(abs(a - b) for a, b in pairs) if pairs else None,
        "speed_two_over_one": (one["step_s"] / two["step_s"]
                               if one.get("step_s") and two.get("step_s") else None)}


def _replicas_child(part, record, options, measured, work):
    """The replicas part in a child process that splits the one GPU in two (before its
    TensorFlow starts); its runs and comparison join this report."""
    reason = too_late(part, 30.0)
    if reason:
        part.skip("replicas (child process)", reason)
        return
    child_dir = os.path.join(work, "replicas")
    args = [sys.executable, ENTRY_POINT, f"--out_dir={child_dir}",
            f"--budget_seconds={part.left():.0f}", "--report_part=replicas",
            f"--report_max_steps={options.max_steps}",
            f"--replica_recipe={options.replica_recipe}"]
    rate = recipes.precision_rate(measured, "float32")
    args += [f"--report_float32_rate={rate!r}"] if rate else []
    args += ["--smoke"] if options.smoke else []
    args += list(options.overrides)
    try:
        proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=part.left() + 60, check=False)
    except subprocess.TimeoutExpired:
        part.skip("replicas (child process)", "ran past its deadline and was stopped")
        return
    try:
        with open(os.path.join(child_dir, output.REPORT_JSON)) as f:
            child = json.load(f)
    except (OSError, ValueError) as error:
        said = [line for line in proc.stderr.splitlines() if line.strip()][-1:]
        part.skip("replicas (child process)", f"exit code {proc.returncode}, no report "
                  f"({first_line(error)}){': ' + said[0][:200] if said else ''}")
        return
    record["runs"] += child.get("runs", [])
    record["replicas"] = child.get("replicas")
    for skipped in child["budget"]["skipped"]:
        part.skip(skipped["item"], skipped["reason"] + " (child process)")


def _peer(part, record, options, measured):
    reason = peer.missing()
    if reason:
        part.skip("Hugging Face peer", reason)
        return
    record["peer"] = {}
    on_gpu = record["machine"]["kind"] == "GPU"
    for precision in rate_part.PRECISIONS:
        reason = too_late(part, 20.0 if not options.smoke else 1.0)
        if reason:
            part.skip(f"Hugging Face peer, {precision}", reason)
            continue
        recipes.apply_recipe("wt103_base", precision, options.overrides, options.smoke,
                             None if options.smoke else peer.NVIDIA_SHAPE)
        rounds, steps, warmup = (1, 2, 1) if options.smoke else (2, 3, 2)
        rate = (measured or {}).get(precision)
        try:
            record["peer"][precision] = peer.compare(precision, on_gpu, rounds, steps, warmup,
                                                     rate.size if rate else 0)
        except (tf.errors.OpError, ValueError, RuntimeError, OSError, app.UsageError) as error:
            part.skip(f"Hugging Face peer, {precision}",
                      f"failed: {type(error).__name__}: {first_line(error)}")


def run_report(options: ReportOptions, clock=time.perf_counter) -> dict:
    """Runs the parts of `options` within its budget; writes and returns the record.

    Raises:
      output.OutDirError: --out_dir cannot take the report (nothing is written).
    """
    output.check_out_dir(options.out_dir)
    os.makedirs(options.out_dir, exist_ok=True)
    shares = {p: SHARES[p] for p in options.parts}
    scale = sum(SHARES.values()) / sum(shares.values())
    budget = Budget(options.budget_seconds, {p: s * scale for p, s in shares.items()}, clock)
    record = {"machine": machine(), "smoke": options.smoke, "command": options.command,
              "options": dataclasses.asdict(options), "rates": None, "runs": [],
              "replicas": None, "peer": None, "profiles": None, "budget": budget.summary()}
    state, work = recipes.FlagState(), tempfile.mkdtemp(prefix="txl-accelerator-report-")
    measured: Optional[dict] = {}
    if options.float32_rate:
        measured = {"float32": MatmulRate(options.float32_rate, 0, "float32", "", 0)}
    try:
        for name in options.parts:
            with budget.part(name) as part:
                if name == "rates":
                    measured = _rates(part, record, options)
                elif name == "recipes":
                    _recipes(part, record, options, measured, work)
                elif name == "replicas":
                    _replicas(part, record, options, measured, work)
                else:
                    _peer(part, record, options, measured)
            record["budget"] = budget.summary()
            output.write(record, options.out_dir)
    finally:
        state.restore()
        shutil.rmtree(work, ignore_errors=True)
        record["budget"] = budget.summary()
        output.write(record, options.out_dir)
        record["limits"] = output.limits(options.out_dir)
        output.write(record, options.out_dir)
    return record
