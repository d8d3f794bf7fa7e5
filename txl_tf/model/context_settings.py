"""`ContextSettings`: how a model reads context beyond the segment it scores. TensorFlow-free.

The four run settings of the paper's recurrence (Sec. 3.2) and of its evaluation (Sec. 3.3,
Appendix C) travel together as one typed value instead of loose arguments. They do not change
the weights: a model trained with one setting is evaluated, exported or asked to generate with
another.

Example:
  >>> settings = ContextSettings.of_config(config, mem_len=1600, clamp_len=1000)
  >>> settings.mem_len, settings.tgt_len        # the rest is the config's
  (1600, 70)
  >>> settings.replace(same_length=True)
"""
import dataclasses

from txl_tf.runtime.ranges import INT32_MAX, Range, check_fields


class ContextSettingsError(ValueError):
    """A context setting out of its range."""


@dataclasses.dataclass(frozen=True)
class ContextSettings:
    """The run settings of the recurrence.

    Attributes:
      tgt_len: Q, tokens per segment (the prediction length of one step).
      mem_len: M, hidden states cached per layer (0: no memory).
      clamp_len: relative distances are clipped to at most clamp_len when > 0 (-1: none).
      same_length: every query of a segment attends to M + 1 keys (the paper's evaluation).
    """
    tgt_len: int = 70
    mem_len: int = 70
    clamp_len: int = -1
    same_length: bool = False

    RANGES = {
        "tgt_len": Range(1, INT32_MAX, "lengths are int32 in the graph"),
        "mem_len": Range(0, INT32_MAX, "0: no memory"),
        "clamp_len": Range(0, INT32_MAX, "-1: no clamping", also=(-1,)),
    }

    def __post_init__(self):
        check_fields(self, ContextSettingsError)
        if not isinstance(self.same_length, bool):
            raise ContextSettingsError(
                f"same_length must be True or False, got {self.same_length!r}.")

    @classmethod
    def of_config(cls, config, tgt_len=None, mem_len=None, clamp_len=None,
                  same_length=None) -> "ContextSettings":
        """The config's settings with the ones given (not None) in their place."""
        def pick(value, default):
            return default if value is None else value
        return cls(tgt_len=int(pick(tgt_len, config.tgt_len)),
                   mem_len=int(pick(mem_len, config.mem_len)),
                   clamp_len=int(pick(clamp_len, config.clamp_len)),
                   same_length=bool(pick(same_length, config.same_length)))

    def replace(self, **changes) -> "ContextSettings":
        """A copy with `changes` (field name -> value) in place."""
        return dataclasses.replace(self, **changes)
