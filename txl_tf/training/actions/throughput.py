"""`Throughput`: training tokens per second for the run's summary."""
from txl_tf.training.controller import LoopOutput


class Throughput:
    """Training tokens per second, without the first loop of the process (tracing)."""
    every = 0

    def __init__(self):
        self.seconds = 0.0
        self.tokens = 0.0
        self.first_loop = None  # (seconds, tokens)

    def __call__(self, output: LoopOutput) -> None:
        if self.first_loop is None:
            self.first_loop = (output.seconds, output.stats.tokens)
        else:
            self.seconds += output.seconds
            self.tokens += output.stats.tokens

    def summary(self) -> dict:
        """`tokens_per_sec` (the first loop when it was the only one, flagged by
        `tokens_per_sec_includes_tracing`)."""
        first_seconds, first_tokens = self.first_loop or (0.0, 0.0)
        rate = (self.tokens / self.seconds if self.seconds else
                first_tokens / first_seconds if first_seconds else None)
        return {"tokens_per_sec": rate,
                "tokens_per_sec_includes_tracing": not self.seconds and bool(first_seconds)}
