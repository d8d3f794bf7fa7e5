"""`check_generation_fits`: whether the largest step of a generation fits in memory, for the
path that will run (the graph loop or the compiled program), before anything is built.

Example:
  >>> check_generation_fits(config, prompt_tokens=300, num_tokens=100, compiled=True)
"""
from txl_tf.generation.buckets import prompt_bucket
from txl_tf.model.memory_estimate import check_step_fits


def check_generation_fits(config, prompt_tokens: int, num_tokens: int, context=None,
                          compiled: bool = False, batch: int = 1, names=None,
                          available=None) -> None:
    """Raises `MemoryEstimateError` when the largest step of a generation cannot fit in this
    machine's memory, for the path that will run, before anything is built.

    Args:
      config: the model configuration.
      prompt_tokens: P, the longest prompt (an upper bound: its characters).
      num_tokens: tokens to generate.
      context: the generation's `ContextSettings` (tgt_len: the prompt's segment length;
        mem_len); None: the model's tgt_len and mem_len.
      compiled: the XLA program (a fixed-size memory of mem_len, the prompt padded to its
        bucket, `prompt_bucket`) instead of the graph loop (segments of at most P tokens, a
        memory growing to P + num_tokens).
      batch: B, prompts generated together.
      names: how the fix names the settings (default {"tgt_len": "--seg_len", "mem_len":
        "--mem_len", "batch": "fewer prompts at once"}).
      available: bytes to compare with (default: this machine's memory).
    """
    seg = config.tgt_len if context is None else context.tgt_len
    mem = config.mem_len if context is None else context.mem_len
    length = max(int(prompt_tokens), 1)
    if compiled:
        q, m, path = prompt_bucket(length, seg)[0], mem, "compiled generation"
    else:
        q, m, path = min(seg, length), min(mem, length + max(num_tokens, 0)), "generation"
    names = names or {"tgt_len": "--seg_len", "mem_len": "--mem_len",
                      "batch": "fewer prompts at once"}
    check_step_fits(config, batch, tgt_len=q, mem_len=m, names=names, path=path,
                    available=available)
