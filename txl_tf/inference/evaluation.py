"""The evaluation loop of txl-tf: exact, token-weighted NLL over contiguous streams with memory.

Glossary: B streams per replica, Q segment length, M memory length, D d_model, L n_layer.

Semantics (the reference's `train_gpu.py` evaluation):
  * dropout off (the model is called with training=False);
  * the memory starts as zeros of length `mem_len` that are attended to (`model.init_mems`) and is
    carried from every segment to the next over the whole split;
  * the data is `B` parallel contiguous streams per replica (row-major cut, `tf_records`), each
    scored with its own memory;
  * loss = (sum of the NLL of every target token) / (number of target tokens), in nats;
    bpc = loss / ln 2; ppl = exp(loss). Not the mean of per-batch perplexities.
Padded positions (label < 0, the `pad` last-segment policy) are not counted.

One loop serves every caller: `segment_nll` scores one segment (also the loop body of the
SavedModel's score_text), `Evaluator.loop` runs it over a (distributed) iterator in one
`tf.function` under any `tf.distribute.Strategy` (per-replica streams and memory, sums reduced
over replicas), and `Evaluator.run` / `Evaluator.evaluate` drive that loop from the host
(`txl_tf.training.Trainer.evaluate`, runners/evaluate.py, the benchmarks).
"""
import dataclasses
import math
import sys
import time
from typing import Callable, Iterable, Optional

import numpy as np
import tensorflow as tf

from txl_tf.model.context_settings import ContextSettings

SUM = tf.distribute.ReduceOp.SUM


@dataclasses.dataclass
class EvalResult:
    """Totals of one evaluation.

    Attributes:
      tokens: number of target tokens scored (all replicas).
      nll_sum: their summed NLL, in nats.
      seconds: wall time.
      steps: segments run (each replica's B streams advance by one segment per step).
    """

    tokens: int
    nll_sum: float
    seconds: float
    steps: int = 0

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
    a terminal, one line every 10 seconds when stderr is a file or a pipe.

    `keras.utils.Progbar` is not used: it writes to stdout (where evaluate.py prints its JSON
    result line) and, on Linux, always redraws with backspaces and colour codes, also into files.
    """

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


def segment_nll(model, inputs, labels, mems, settings: Optional[ContextSettings] = None):
    """Scores one segment of every stream, with memory and without dropout.

    Args:
      model: a `TransformerXL`.
      inputs: int32 [B, Q].
      labels: int32 [B, Q]; labels < 0 are padding, not scored.
      mems: L float32 [B, M, D] (a list or tuple; empty for the vanilla model).
      settings: the run settings mem_len, clamp_len, same_length (None: the model config's;
        the segment length is the one of `inputs`).

    Returns:
      (nll_sum float32 [], tokens float32 [], new mems: L [B, min(mem_len, M + Q), D]).
    """
    valid = labels >= 0
    settings = settings or ContextSettings.of_config(model.config)
    out = model(inputs, mems=list(mems) if mems else None,
                labels=tf.where(valid, labels, tf.zeros_like(labels)), training=False,
                mem_len=settings.mem_len, clamp_len=settings.clamp_len,
                same_length=settings.same_length)
    nll = tf.where(valid, tf.cast(out["nll"], tf.float32), tf.zeros([], tf.float32))
    return tf.reduce_sum(nll), tf.reduce_sum(tf.cast(valid, tf.float32)), out["mems"]


def as_dataset(batches, batch_size: int) -> tf.data.Dataset:
    """A `tf.data.Dataset` of {"inputs", "labels"} int32 [batch_size, Q] from `batches`: a
    dataset (returned as is) or an iterable of such dicts or of (inputs, labels) pairs."""
    if isinstance(batches, tf.data.Dataset):
        return batches

    def generate():
        for batch in batches:
            inputs, labels = ((batch["inputs"], batch["labels"]) if isinstance(batch, dict)
                              else batch)
            yield {"inputs": np.asarray(inputs, np.int32), "labels": np.asarray(labels, np.int32)}

    spec = tf.TensorSpec([batch_size, None], tf.int32)
    return tf.data.Dataset.from_generator(generate, output_signature={"inputs": spec,
                                                                      "labels": spec})


class Evaluator:
    """Scores contiguous streams with a model, carrying the memory, under a strategy.

    Args:
      model: a `TransformerXL` (created under `strategy.scope()`).
      settings: the evaluation run settings, a `ContextSettings` (None: the model config's);
        its mem_len, clamp_len and same_length are read (the segment length is the data's).
      strategy: the `tf.distribute.Strategy` whose replicas each score their own streams
        (default: the current one, i.e. one device outside any scope).

    Example:
      >>> settings = ContextSettings.of_config(model.config, mem_len=1600)
      >>> evaluator = Evaluator(model, settings)
      >>> result = evaluator.evaluate(dataset, batch_size=16, num_steps=steps)
      >>> result.loss, result.ppl
    """

    def __init__(self, model, settings: Optional[ContextSettings] = None, strategy=None):
        self.model = model
        self.strategy = strategy or tf.distribute.get_strategy()
        self.settings = settings or ContextSettings.of_config(model.config)
        self._loop_fn = tf.function(self.loop, reduce_retracing=True)

    def replica_step(self, batch, mems):
        """One segment on one replica: batch {"inputs", "labels"} int32 [B, Q], mems L [B, M, D]
        -> (new mems, nll_sum float32 [], tokens float32 [])."""
        nll_sum, tokens, new_mems = segment_nll(
            self.model, batch["inputs"], batch["labels"], mems, self.settings)
        # The memory keeps its length (mem_len): a loop variable of unchanging shape.
        new_mems = [tf.ensure_shape(new, old.shape) for new, old in zip(new_mems, mems)]
        return new_mems, nll_sum, tokens

    def init_memory(self, per_replica_batch: int):
        """Zero memory on every replica: distributed L x [B, mem_len, D]."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: self.model.init_mems(per_replica_batch, self.settings.mem_len))

    def loop(self, iterator, mems, num_steps):
        """Up to `num_steps` steps of `iterator` (fewer when it ends), memory carried.

        Args:
          iterator: over {"inputs", "labels"} (distributed, or plain with one replica).
          mems: distributed memory (`init_memory` or the previous call's).
          num_steps: int32 [].

        Returns:
          (mems, nll_sum float32 [], tokens float32 [], steps int32 []), sums over replicas.
        """
        strategy = self.strategy
        nll = tf.constant(0.0, tf.float32)
        tokens = tf.constant(0.0, tf.float32)
        steps = tf.constant(0, tf.int32)
        # With one local replica, MultiWorkerMirroredStrategy's run returns plain tensors where
        # `init_memory` gives one-component PerReplica values: a loop variable keeps its
        # structure, so the memory enters the loop as run output.
        mems = strategy.run(lambda m: [tf.identity(x) for x in m], args=(mems,))
        for _ in tf.range(num_steps):
            optional = iterator.get_next_as_optional()
            if not optional.has_value():
                break
            mems, step_nll, step_tokens = strategy.run(
                self.replica_step, args=(optional.get_value(), mems))
            nll += strategy.reduce(SUM, step_nll, axis=None)
            tokens += strategy.reduce(SUM, step_tokens, axis=None)
            steps += 1
        return mems, nll, tokens, steps

    def run(self, iterator, per_replica_batch: int, num_steps: int = -1,
            steps_per_call: Optional[int] = None,
            on_step: Optional[Callable[[int, EvalResult], None]] = None) -> EvalResult:
        """Evaluates from zero memory until `iterator` ends or `num_steps` steps (-1: no limit).

        Args:
          iterator: as in `loop`.
          per_replica_batch: B.
          num_steps: most steps (-1: until the iterator ends).
          steps_per_call: steps per compiled call (None: all in one); `on_step` runs after each.
          on_step: called with (steps so far, `EvalResult` so far).

        Returns:
          The `EvalResult`; its sums are float32 within a call, float64 across calls.
        """
        limit = np.iinfo(np.int32).max if num_steps is None or num_steps < 0 else int(num_steps)
        chunk = limit if steps_per_call is None else max(int(steps_per_call), 1)
        mems = self.init_memory(per_replica_batch)
        result = EvalResult(tokens=0, nll_sum=0.0, seconds=0.0, steps=0)
        start = time.time()
        while result.steps < limit:
            n = min(chunk, limit - result.steps)
            mems, nll, tokens, steps = self._loop_fn(iterator, mems, tf.constant(n, tf.int32))
            result = EvalResult(tokens=result.tokens + int(tokens),
                                nll_sum=result.nll_sum + float(nll),
                                seconds=time.time() - start, steps=result.steps + int(steps))
            if on_step and int(steps):
                on_step(result.steps, result)
            if int(steps) < n:
                break
        return result

    def evaluate(self, batches: Iterable, batch_size: int, num_steps: Optional[int] = None,
                 progress: bool = True,
                 on_step: Optional[Callable[[int, EvalResult], None]] = None) -> EvalResult:
        """Scores every batch in order (at most `num_steps`), one segment per compiled call.

        Args:
          batches: a `tf.data.Dataset` or an iterable of dicts {"inputs", "labels"} (or pairs)
            of int [batch_size, Q]; element t of stream b continues element t-1 of stream b.
            (With several replicas, give `run` a distributed iterator instead.)
          batch_size: B, the number of parallel streams per replica.
          num_steps: number of batches (the progress bar's total and a limit); None: all.
          progress: show a `Progress` bar on stderr.
          on_step: called with (steps so far, `EvalResult` so far).
        """
        dataset = as_dataset(batches, batch_size)
        iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
        bar = Progress(num_steps) if progress else None

        def step_done(steps, result):
            if bar:
                bar.update(steps, _progress_text(result))
            if on_step:
                on_step(steps, result)

        result = self.run(iterator, batch_size, -1 if num_steps is None else num_steps,
                          steps_per_call=1, on_step=step_done)
        if bar:
            bar.close(result.steps, _progress_text(result))
        return result


def _progress_text(result: EvalResult) -> str:
    return f"loss {result.loss:.4f} {result.tokens_per_second:,.0f} tok/s"
