"""How generation chooses each token: greedy, top-k, top-p (nucleus), temperature, seeded.

`Sampler` is the one type of the sampling settings: TensorFlow-free, it travels from the doors
(generate.py's flags, `Generator.generate`'s keywords, the Keras model's `generate`, the
SavedModel's inputs) to `sampling.choose` (the one implementation, as generate.py and the
SavedModel use it). Python values are checked here; inside the graph its fields are tensors (a
scalar or one value per row [B]), taken as given: the SavedModel checks them in the graph
(`sampling.setting_checks`). `get_sampler` also takes the names of keras-hub's samplers with
their defaults: "greedy", "top_k" (k=5), "top_p" (p=0.1), "random".

Example:
  >>> get_sampler("greedy")
  Sampler(temperature=0.0, top_k=0, top_p=1.0, seed=0)
  >>> Sampler(temperature=0.8, top_k=40, top_p=0.95, seed=1)   # generate.py's flags
"""
import dataclasses
import numbers

from txl_tf.generation.call_bounds import check_generation
from txl_tf.generation.errors import CausalLMInputError


def _graph_value(value) -> bool:
    """Whether `value` is a TensorFlow tensor (told without importing TensorFlow)."""
    return type(value).__module__.startswith("tensorflow.")


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Sampler:
    """The settings of generate.py's flags of the same names.

    Attributes:
      temperature: divides the logits; 0 = greedy (argmax, first on ties).
      top_k: keep only the k most likely tokens (0 = all).
      top_p: keep the smallest set of most likely tokens with this much probability (1 = all).
      seed: token t of a row uses the stateless seed (seed, t).

    All four are Python numbers (checked here) or, inside the graph, all four tensors
    (float32, int32, float32, int64; each [] or [B]), checked there if at all
    (`sampling.setting_checks`).
    """
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        if all(_graph_value(v) for v in (self.temperature, self.top_k, self.top_p, self.seed)):
            return  # the graph's settings
        if not (_real(self.temperature) and self.temperature >= 0):
            raise CausalLMInputError(f"temperature must be a number >= 0 (0: greedy), got "
                                     f"{self.temperature!r}.")
        if not _integer(self.top_k) or self.top_k < 0:
            raise CausalLMInputError(f"top_k must be an int >= 0 (0: no top-k filter), got "
                                     f"{self.top_k!r}.")
        if not (_real(self.top_p) and 0.0 < self.top_p <= 1.0):
            raise CausalLMInputError(f"top_p must be in (0, 1] (1: no nucleus filter), got "
                                     f"{self.top_p!r}.")
        if not _integer(self.seed):
            raise CausalLMInputError(f"seed must be an int, got {self.seed!r}.")
        check_generation(0, self.top_k, self.seed, CausalLMInputError)

    def settings(self) -> dict:
        """The keyword arguments of `Generator.generate`."""
        return {"temperature": float(self.temperature), "top_k": int(self.top_k),
                "top_p": float(self.top_p), "seed": int(self.seed)}


NAMED = {"greedy": Sampler(temperature=0.0), "top_k": Sampler(top_k=5),
         "top_p": Sampler(top_p=0.1), "random": Sampler()}


def get_sampler(sampler, seed=None) -> Sampler:
    """A `Sampler` from a `Sampler` or one of the names of `NAMED`.

    Args:
      sampler: a `Sampler` or "greedy", "top_k", "top_p", "random".
      seed: replaces the sampler's seed when given.

    Raises:
      CausalLMInputError: an unknown name or another type.
    """
    if isinstance(sampler, str):
        if sampler not in NAMED:
            raise CausalLMInputError(f"unknown sampler {sampler!r}; use one of "
                                     f"{', '.join(NAMED)} or a Sampler(...).")
        sampler = NAMED[sampler]
    if not isinstance(sampler, Sampler):
        raise CausalLMInputError(f"sampler must be a name ({', '.join(NAMED)}) or a "
                                 f"txl_tf Sampler, got {type(sampler).__name__}.")
    return sampler if seed is None else dataclasses.replace(sampler, seed=seed)
