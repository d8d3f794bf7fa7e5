"""The values of a run's named choices, TensorFlow-free so that options and flags can check
them before TensorFlow loads.

  STRATEGIES: `--strategy`, made by `txl_tf/training/distribute.py: create_strategy`.
  JIT_COMPILE: `--jit_compile` (and export's `--gen_jit_compile`), parsed once by
    `JitCompile.parse` and resolved per device by `txl_tf/devices/step_compilation.py`
    (`choose` for a training step, `choose_generation` for generation).
"""
import dataclasses
from typing import Optional

STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
JIT_COMPILE = ("auto", "true", "false")


@dataclasses.dataclass(frozen=True)
class JitCompile:
    """A `--jit_compile` setting: `setting` is one of JIT_COMPILE.

    Example:
      >>> JitCompile.parse(True)
      JitCompile(setting='true')
      >>> JitCompile.parse("auto").forced is None
      True
    """
    setting: str

    def __post_init__(self):
        if self.setting not in JIT_COMPILE:
            raise ValueError(f"--jit_compile must be one of {', '.join(JIT_COMPILE)}, got "
                             f"{self.setting!r}.")

    @classmethod
    def parse(cls, value, flag: str = "--jit_compile") -> "JitCompile":
        """The setting of `value`: 'auto', 'true', 'false', a bool (True: 'true') or a
        `JitCompile` (returned as it is).

        Raises:
          ValueError: anything else, in one line naming `flag` and the allowed values.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str) or value not in JIT_COMPILE:
            raise ValueError(f"{flag} must be one of {', '.join(JIT_COMPILE)}, got {value!r}.")
        return cls(value)

    @property
    def forced(self) -> Optional[bool]:
        """None for 'auto' (the device decides), else whether XLA compiles."""
        return None if self.setting == "auto" else self.setting == "true"
