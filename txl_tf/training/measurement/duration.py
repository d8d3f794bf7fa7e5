"""How long a training run will take on this machine: estimated before its first step, then
measured.

A training step costs the model FLOPs `txl_tf/model/flops.py` counts from the configuration
(forward and backward matrix products of every token of the global batch); this machine does
at most the matmul rate `txl_tf/training/measurement/matmul_rate.py` measures (large matrix products in the
run's precision, on its first device). Their ratio is a lower bound on the seconds per step
(a real step also does element-wise work and reaches a fraction of the peak:
docs/performance.md), so the line says "at least". A recipe sized for other hardware
(`TrainOptions.target_hardware`) is named when the run would take more than a day here. Once a loop after the first (which includes
compilation) has run, `measured_line` replaces the estimate by the measured seconds per step
(`txl_tf/training/measurement/step_pace.py`) and says how far the estimate was from it.

Example:
  >>> estimate = estimate_step(config, chunk_batch=1, global_batch=64, replicas=1,
  ...                          rate=measure_matmul_rate().flops_per_second)
  >>> print(estimate_line(estimate, steps=400000, target_hardware="a TPU with 32 cores"))
  duration estimate: at least 5.1e+03 s per step here, at least 65 years for 400,000 steps ...
"""
import dataclasses
from typing import Optional

from txl_tf.model import flops as model_flops
from txl_tf.training.measurement.step_pace import StepPace

_DAY = 86400.0


def human_duration(seconds: float) -> str:
    """'0.042 s', '4.2 s', '42 s', '12 min', '3.5 hours', '12 days', '3.2 years'."""
    seconds = max(float(seconds), 0.0)
    if 0 < seconds < 0.01:
        return f"{seconds * 1000:.2g} ms"
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * _DAY:
        return f"{seconds / 3600:.1f} hours"
    if seconds < 730 * _DAY:
        return f"{seconds / _DAY:.0f} days"
    return f"{seconds / (365.25 * _DAY):.1f} years"


@dataclasses.dataclass
class StepEstimate:
    """The cost of one training step against this machine's rate.

    Attributes:
      flops: model FLOPs of one step (all replicas).
      rate: measured matmul FLOP/s of one device.
      replicas: devices sharing the step.
      seconds: lower bound on the seconds per step, flops / (rate x replicas).
    """
    flops: float
    rate: float
    replicas: int
    seconds: float


def estimate_step(config, chunk_batch: int, global_batch: int, replicas: int,
                  rate: float) -> StepEstimate:
    """The `StepEstimate` of a run.

    Args:
      config: the model's `TransformerXLConfig` (tgt_len Q and mem_len M of training).
      chunk_batch: streams a replica computes at once (per-replica batch / grad_accum_steps).
      global_batch: streams of one step, all replicas.
      replicas: replicas in sync.
      rate: FLOP/s of one device (`measure_matmul_rate`).
    """
    per_token = model_flops.train_flops_per_token(config, chunk_batch, config.tgt_len,
                                                  config.mem_len)
    flops = per_token * global_batch * config.tgt_len
    return StepEstimate(flops, rate, replicas, flops / (rate * replicas))


def estimate_line(estimate: StepEstimate, steps: int, target_hardware: str = "") -> str:
    """One line: seconds per step and the run's duration here, and the recipe's hardware when
    the run would take more than a day here."""
    total = estimate.seconds * steps
    line = (f"duration estimate: at least {estimate.seconds:,.3g} s per step here, at least "
            f"{human_duration(total)} for {steps:,} steps ({estimate.flops:.3g} FLOPs per step; "
            f"matmul peak {estimate.rate / 1e9:,.0f} GFLOP/s x {estimate.replicas} "
            "device(s); a real step is slower)")
    if target_hardware and total > _DAY:
        line += (f"; the recipe targets {target_hardware}, see docs/training.md")
    return line


def measured_line(pace: StepPace, steps_left: int) -> Optional[str]:
    """One line: the measured seconds per step (compilation excluded), the time left, the
    compilation's share of the first loop and the estimate against the measurement; None
    before a loop after the first was measured.

    Args:
      pace: the run's `StepPace`.
      steps_left: steps still to run.
    """
    if not pace.measured:
        return None
    seconds = pace.seconds_per_step()
    line = f"duration measured: {seconds:,.3g} s per step ({pace.source()}, compilation excluded)"
    if steps_left > 0:
        line += f", about {human_duration(seconds * steps_left)} for the {steps_left:,} steps left"
    first_steps, first_seconds = pace.first_loop
    line += (f"; the first {first_steps:,} steps took {human_duration(first_seconds)}, "
             f"about {human_duration(pace.compile_seconds())} of it tracing and compilation")
    if pace.estimate:
        line += (f"; the estimate from the FLOPs was {pace.estimate:,.3g} s per step, the "
                 f"measured step {seconds / pace.estimate:,.3g}x that")
    return line
