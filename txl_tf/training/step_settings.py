"""`StepSettings`: how one training step treats its gradient. TensorFlow-free.

One value for the settings that `ReplicaStep` (`txl_tf/training/replica_step.py`), the
`Trainer` and `TransformerXLCausalLM.compile` pass on unchanged.

Example:
  >>> settings = StepSettings(clip=0.25, grad_accum_steps=2, loss_scaling=True)
  >>> trainer = Trainer(model, optimizer, strategy, settings)
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """The settings of one training step (the field order is compile()'s).

    Attributes:
      clip: max global norm of the replica-summed gradient (<= 0: no clipping).
      half_loss: train on the last Q - Q // 2 positions of every segment only.
      loss_scaling: dynamic loss scaling (for mixed_float16).
      initial_loss_scale: the loss scale of the first step.
      growth_interval: finite steps after which the loss scale doubles.
      grad_accum_steps: chunks per replica batch whose gradients are accumulated (divides B).
      jit_compile: compile the step with XLA (how: `step_compilation.compiled_mode` of the
        strategy).
    """
    clip: float = 0.25
    half_loss: bool = False
    loss_scaling: bool = False
    initial_loss_scale: float = 2.0 ** 15
    growth_interval: int = 2000
    grad_accum_steps: int = 1
    jit_compile: bool = False

    def __post_init__(self):
        if self.grad_accum_steps < 1:
            raise ValueError(f"grad_accum_steps must be >= 1, got {self.grad_accum_steps}.")

    def replace(self, **changes) -> "StepSettings":
        """A copy with `changes` (field name -> value) in place."""
        return dataclasses.replace(self, **changes)
