"""`ServingLimits`: the bounds on one request of an exported model, fixed at export time
(runners/export.py's flags; checked inside the graph by `ServingModule`). TensorFlow-free.
"""
import dataclasses

from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range, check_fields

_LIMIT = Range(1, INT32_MAX, "the signatures compare it with int32 lengths")


@dataclasses.dataclass(frozen=True)
class ServingLimits:
    """Bounds on the work of one request, fixed at export time.

    Attributes:
      max_seq_len: Longest tokens / prompt row (tokens) a request may send to score, nll or
        generate, and longest tokenized generate_text prompt.
      max_num_tokens: Most tokens generate and generate_text produce per row (the width of
        generate's tokens output).
      max_text_bytes: Longest text (UTF-8 bytes) of score_text and generate_text.
      max_batch_size: Most rows (texts) of one request, and init_mems' largest batch.
      max_request_tokens: Most tokens one request may run through the model, summed over its
        rows: B x Q for score and nll, B x (P + the largest num_tokens) for generate, the
        tokens of every text for score_text, and prompt + num_tokens of every text for
        generate_text.
      max_request_bytes: Most UTF-8 bytes of all the texts of one score_text or generate_text
        request together (checked before they are tokenized).

    score returns log_probs float32 [B, Q, V]: 4 * Q * V bytes per row of max_seq_len tokens.
    """
    max_seq_len: int = 512
    max_num_tokens: int = 1024
    max_text_bytes: int = 100_000
    max_batch_size: int = 64
    max_request_tokens: int = 16_384
    max_request_bytes: int = 1_000_000

    # The declared range of every number (txl_tf/runtime/ranges.py).
    RANGES = {name: _LIMIT for name in ("max_seq_len", "max_num_tokens", "max_text_bytes",
                                         "max_batch_size", "max_request_tokens",
                                         "max_request_bytes")}

    def __post_init__(self):
        check_fields(self, ValueError, prefix="--")

    def message(self, name, what) -> str:
        """The error text of a request over the limit `name`."""
        return (f"{what} exceeds {name}={getattr(self, name)}, a limit of this export "
                f"(runners/export.py --{name}); send a smaller request or re-export with a "
                f"larger --{name}.")
