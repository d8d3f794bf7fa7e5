"""`GenerateOptions`: what runners/generate.py generates and how (`generate_text` in
`txl_tf/commands/generate.py`). TensorFlow-free, so that generate.py's `--help`
and usage errors do not wait for it.
"""
import dataclasses
from typing import Optional

from txl_tf.generation.call_bounds import GENERATION_RANGES, SETTING_RANGES
from txl_tf.runtime.ranges import Range


@dataclasses.dataclass
class GenerateOptions:
    """What to generate and how (the flags of runners/generate.py).

    Attributes:
      model_dir: Model directory (config.json, checkpoints, vocab.txt, corpus-info.json).
      checkpoint: Which checkpoint of --model_dir: latest (the newest), best (MODEL_DIR/best/,
        the best on validation), ckpt-N, or a checkpoint path prefix.
      prompt: Prompt text.
      prompt_file: Read the prompt from this file instead.
      vocab_file: Vocabulary (default MODEL_DIR/vocab.txt).
      num_tokens: Number of tokens to generate.
      temperature: Sampling temperature; 0 = greedy (argmax).
      top_k: Keep only the k most likely tokens (0 = all).
      top_p: Nucleus sampling: smallest set with this much probability (1.0 = all).
      seed: Random seed (token t uses the stateless seed (seed, t)).
      seg_len: Prompt segment length (default: the model's tgt_len).
      mem_len: Memory length (default: the model's mem_len). Context beyond it is seen only
        through the memory's recurrence.
      clamp_len: Clamp relative distances (default: the model's).
      same_length: Same attention length for every query.
      stream: Print tokens as they are generated (token by token, never compiled by XLA).
      output_ids: Add the generated token ids to the JSON result.
      jit_compile: With --nostream, run the whole sampling loop as one XLA program (fixed-size
        memory, prompt padded to a power of two, the same tokens): auto (on for GPU and TPU,
        off on CPU, where the graph loop is faster), true, false.
    """
    model_dir: Optional[str] = None
    # txl_tf.storage.model_files.LATEST, written out: this module stays TensorFlow-free
    checkpoint: str = "latest"
    prompt: Optional[str] = None
    prompt_file: Optional[str] = None
    vocab_file: Optional[str] = None
    num_tokens: int = 100
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    seg_len: Optional[int] = None
    mem_len: Optional[int] = None
    clamp_len: Optional[int] = None
    same_length: bool = False
    stream: bool = True
    output_ids: bool = False
    jit_compile: str = "auto"

    # The declared range of every number (txl_tf/runtime/ranges.py): those of every generation
    # call and generator (call_bounds.GENERATION_RANGES, SETTING_RANGES).
    RANGES = {
        **GENERATION_RANGES,
        **SETTING_RANGES,
        "temperature": Range(0.0, None, "0: greedy", integer=False),
        "top_p": Range(0.0, 1.0, "1: all", open_low=True, integer=False),
    }


class GenerateInputError(ValueError):
    """Bad generation input."""
