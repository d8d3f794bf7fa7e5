"""Exact, token-weighted evaluation of a `TransformerXL` over contiguous streams with memory.

Semantics (the reference's `train_gpu.py` evaluation):
  * dropout off (the model is called with training=False);
  * the memory starts as zeros of length `mem_len` that are attended to (`model.init_mems`) and is
    carried from every segment to the next over the whole split;
  * the stream is cut into `batch_size` parallel contiguous rows (row-major), each scored with
    its own memory;
  * loss = (sum of the NLL of every target token) / (number of target tokens), in nats;
    bpc = loss / ln 2; ppl = exp(loss). Not the mean of per-batch perplexities.
Padded positions (label < 0, the `pad` last-segment policy) are not counted.
"""
import dataclasses
import math
import sys
import time
from typing import Callable, Iterable, Optional

import numpy as np
import tensorflow as tf


@dataclasses.dataclass
class EvalResult:
    """Totals of one evaluation: `tokens` scored, `nll_sum` in nats, wall `seconds`."""

    tokens: int
    nll_sum: float
    seconds: float

    @property
    def loss(self) -> float:
        return self.nll_sum / self.tokens if self.tokens else float("nan")

    @property
    def bpc(self) -> float:
        return self.loss / math.log(2.0)

    @property
    def ppl(self) -> float:
        return math.exp(self.loss) if self.loss < 700 else float("inf")

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


class Progress:
    """A text progress bar on stderr (`total` may be None): redrawn in place twice a second on
    a terminal, one line every 10 seconds when stderr is a file or a pipe."""

    def __init__(self, total: Optional[int], label: str = "eval", stream=None, width: int = 30):
        self.total, self.label, self.width = total, label, width
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.time()
        self.last = 0.0

    def update(self, done: int, extra: str = "", force: bool = False):
        now = time.time()
        if not force and now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        if self.total:
            filled = int(self.width * min(done, self.total) / self.total)
            bar = f"[{'=' * filled}{'.' * (self.width - filled)}] {done}/{self.total}"
        else:
            bar = f"{done}"
        line = f"{self.label} {bar} {now - self.start:6.1f}s {extra}"
        self.stream.write(f"\r{line}" if self.tty else f"{line}\n")
        self.stream.flush()

    def close(self, done: int, extra: str = ""):
        self.update(done, extra, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


class Evaluator:
    """Scores batches of contiguous streams with a model, carrying the memory.

    Args:
      model: a `TransformerXL` (dropout is off because it is called with training=False).
      mem_len, clamp_len, same_length: the evaluation run settings (None: the model config's).
    """

    def __init__(self, model, mem_len=None, clamp_len=None, same_length=None):
        c = model.config
        self.model = model
        self.mem_len = c.mem_len if mem_len is None else int(mem_len)
        self.clamp_len = c.clamp_len if clamp_len is None else int(clamp_len)
        self.same_length = c.same_length if same_length is None else bool(same_length)
        self._step = tf.function(self._step_fn, reduce_retracing=True)

    def _step_fn(self, inputs, labels, mems):
        """inputs, labels int32 [B, Q] (labels < 0 are padding); mems tuple of L [B, M, D].
        Returns (float64 NLL sum, int64 count, new mems)."""
        valid = labels >= 0
        out = self.model(inputs, mems=list(mems) if mems else None,
                         labels=tf.where(valid, labels, tf.zeros_like(labels)), training=False,
                         mem_len=self.mem_len, clamp_len=self.clamp_len,
                         same_length=self.same_length)
        nll = tf.where(valid, tf.cast(out["nll"], tf.float64), tf.zeros([], tf.float64))
        return tf.reduce_sum(nll), tf.reduce_sum(tf.cast(valid, tf.int64)), tuple(out["mems"])

    def evaluate(self, batches: Iterable, batch_size: int, num_steps: Optional[int] = None,
                 progress: bool = True,
                 on_step: Optional[Callable[[int, "EvalResult"], None]] = None) -> EvalResult:
        """Scores every batch in order.

        Args:
          batches: iterable of dicts {"inputs", "labels"} (or pairs) of int [batch_size, Q];
            element t of stream b continues element t-1 of stream b.
          batch_size: B, the number of parallel streams.
          num_steps: number of batches, for the progress bar.
        """
        mems = tuple(self.model.init_mems(batch_size, self.mem_len))
        nll_sum, count, steps = 0.0, 0, 0
        bar = Progress(num_steps) if progress else None
        start = time.time()
        for batch in batches:
            inputs, labels = ((batch["inputs"], batch["labels"]) if isinstance(batch, dict)
                              else batch)
            inputs = tf.convert_to_tensor(inputs, tf.int32)
            labels = tf.convert_to_tensor(labels, tf.int32)
            if inputs.shape[0] != batch_size:
                raise ValueError(f"a batch has {inputs.shape[0]} streams, expected {batch_size}.")
            s, n, mems = self._step(inputs, labels, mems)
            nll_sum += float(s)
            count += int(n)
            steps += 1
            result = EvalResult(count, nll_sum, time.time() - start)
            if bar:
                bar.update(steps, f"loss {result.loss:.4f} {result.tokens_per_second:,.0f} tok/s")
            if on_step:
                on_step(steps, result)
        result = EvalResult(count, nll_sum, time.time() - start)
        if bar:
            bar.close(steps, f"loss {result.loss:.4f} {result.tokens_per_second:,.0f} tok/s")
        return result


def stream_batches(tokens, batch_size: int, tgt_len: int, last_segment: str = "drop"):
    """(inputs, labels) numpy batches of a token stream cut into `batch_size` contiguous rows.

    `drop` (the reference) scores whole segments only: each row keeps (L - 1) // tgt_len
    segments of its L = N // batch_size tokens. `pad` also scores every row's last partial
    segment (labels -1 where padded), so all N - batch_size tokens that have a predecessor in
    their row are scored (N - 1 with batch_size 1).

    Returns (list of batches, num_steps). Same cut as `tf_records` (a test checks it).
    """
    tokens = np.asarray(tokens, np.int32).reshape(-1)
    n = tokens.size
    if last_segment == "drop":
        length = n // batch_size
        steps = (length - 1) // tgt_len if length else 0
        if steps < 1:
            raise ValueError(
                f"the text has {n} tokens, too few for one segment of {batch_size} streams x "
                f"tgt_len {tgt_len} (needs {batch_size * (tgt_len + 1)}); lower --batch_size or "
                "--tgt_len, or use --last_segment=pad.")
        matrix = tokens[:batch_size * length].reshape(batch_size, length)[:, :steps * tgt_len + 1]
    elif last_segment == "pad":
        length = -(-n // batch_size)
        if length < 2:
            raise ValueError(f"the text has {n} tokens, too few for {batch_size} streams of at "
                             "least 2 tokens; lower --batch_size.")
        steps = -(-(length - 1) // tgt_len)
        matrix = np.full((batch_size, steps * tgt_len + 1), -1, np.int32)
        padded = np.full(batch_size * length, -1, np.int32)
        padded[:n] = tokens
        matrix[:, :length] = padded.reshape(batch_size, length)
    else:
        raise ValueError(f"last_segment must be 'drop' or 'pad', got {last_segment!r}.")
    batches = []
    for t in range(steps):
        block = matrix[:, t * tgt_len:(t + 1) * tgt_len + 1]
        inputs = np.maximum(block[:, :-1], 0)
        labels = np.where(block[:, :-1] < 0, -1, block[:, 1:])
        batches.append((inputs, labels))
    return batches, steps
