"""`ServingSettings`: the run settings an export serves with, fixed at export time.
TensorFlow-free.

The id and text scoring signatures (score, nll, init_mems, score_text) read `scoring`, a
`ContextSettings` (score_text cuts a text into segments of its tgt_len); the generate
signatures read `generation`: memory gen_mem_len, prompt segments of gen_seg_len, the scoring
clamp_len, same_length off.

Example:
  >>> settings = ServingSettings(ContextSettings(tgt_len=70, mem_len=70), gen_mem_len=640,
  ...                            gen_seg_len=70)
  >>> settings.generation.mem_len, settings.to_json()["gen_mem_len"]
  (640, 640)
"""
import dataclasses

from txl_tf.model.context_settings import ContextSettings


@dataclasses.dataclass(frozen=True)
class ServingSettings:
    """The run settings of a `ServingModule`.

    Attributes:
      scoring: mem_len, clamp_len, same_length of score / nll / init_mems / score_text, and
        tgt_len, the segment length of score_text.
      gen_mem_len: memory of the generate signatures (>= 1).
      gen_seg_len: prompt segment length of the generate signatures (>= 1).
      gen_jit_compile: the generate signatures run their sampling loop as one XLA program.
    """
    scoring: ContextSettings
    gen_mem_len: int
    gen_seg_len: int
    gen_jit_compile: bool = False

    def __post_init__(self):
        # the generation settings are checked as run settings of their own
        self.generation  # noqa: B018

    @property
    def generation(self) -> ContextSettings:
        """The run settings of the generate signatures (tgt_len: the prompt segment length)."""
        return ContextSettings(tgt_len=int(self.gen_seg_len), mem_len=int(self.gen_mem_len),
                               clamp_len=self.scoring.clamp_len, same_length=False)

    def to_json(self) -> dict:
        """The fields the export info records, in its order: mem_len, clamp_len, same_length,
        tgt_len, gen_mem_len, gen_seg_len, gen_jit_compile."""
        s = self.scoring
        return {"mem_len": s.mem_len, "clamp_len": s.clamp_len, "same_length": s.same_length,
                "tgt_len": s.tgt_len, "gen_mem_len": self.gen_mem_len,
                "gen_seg_len": self.gen_seg_len, "gen_jit_compile": self.gen_jit_compile}
