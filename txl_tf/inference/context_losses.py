"""Per-token losses of a `TransformerXL` that sees exactly c tokens of context.

l(c, t) = -log P(x_t | x_{t-1}, ..., x_{t-c}) for a fixed set of scored positions t, at several
context lengths c: the input of the RECL metric (`txl_tf.inference.relative_effective_context`).

How exactly c is achieved: l(c, t) is the loss the model gives x_t when the text starts at x_{t-c}.
Every scored token gets its own window, the c tokens x_{t-c} .. x_{t-1}, read from scratch in the
model's own way (a `ContextRegime`); nothing computed from an earlier token enters, so a token at
distance c + 1 cannot change the loss. The kinds of model:
  * with memory (`recurrent_regime`): the window is read from its first token in segments of Q
    with the memory carried from segment to segment, starting from zeros that are attended to,
    exactly as `evaluate.py` reads a split (mem_len, clamp_len and same_length included). The
    scored token sits at position (c - 1) mod Q of its segment for every t, so all tokens of one
    c are scored alike;
  * without memory (`window_regime`): the window is one segment of c tokens without memory (the
    sliding window of a vanilla Transformer; relative distances up to c-1, clipped by
    clamp_len; absolute positions of input sinusoids c-1 .. 0, the scored token's input at 0).
Every attention variant (`txl_tf/model/attention_variants.py`) is read through the `TransformerXL`
call contract, so new encodings plug in.
Absolute encodings (`TransformerXL.absolute_positions`: the `vaswani` and `alrfou` variants)
count positions back from the newest key of a call, so a token's loss depends on how many
tokens follow it in its segment: their window ends at the scored token's input (the window of
x_t with context c is exactly x_{t-c} .. x_{t-1}), for both regimes.
The token at distance c changes the loss only if the model can reach that far: with memory and
same_length every layer looks M tokens back, so L layers reach L * M tokens; a longer c measures
a model that cannot use the extra tokens, which is what RECL is meant to detect.

Cost: with relative encodings, causality makes one window serve every context length: the window
starting at s, read once up to its longest needed length, gives at its position c - 1 the loss of
x_{s+c} with context c. The windows are the distinct starts s = t - c (T + max c - min c of them
for T contiguous scored tokens), each read up to the longest c it serves, batched by length. The
work is about (T + max c) * max c token positions whatever the number of context lengths, against
T positions for one ordinary evaluation pass: RECL is a small-corpus measurement. Absolute
encodings need one window per (c, t), batched by equal length: T * sum(c) positions.

Size glossary: B windows per batch, W window length, Q segment length, M memory length,
C context lengths, T scored tokens.
"""
import dataclasses
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from txl_tf.inference.evaluation import Progress
from txl_tf.model.context_settings import ContextSettings


class ContextLossError(ValueError):
    """Token streams, positions, context lengths or settings the losses cannot be computed on."""


@dataclasses.dataclass(frozen=True)
class ContextRegime:
    """How a model reads the c tokens of context of a scored token: the run settings of the
    reading (`ContextSettings`, their one home) and whether it is read with memory.

    Attributes:
      settings: the run settings (tgt_len, mem_len, clamp_len, same_length).
      recurrent: True reads the window in segments of settings.tgt_len with settings.mem_len
        memory; False reads the whole window as one segment without memory (sliding window:
        settings.mem_len must be 0 and same_length False; tgt_len is not read).
    """

    settings: ContextSettings = ContextSettings(mem_len=0)
    recurrent: bool = False

    def __post_init__(self):
        if not self.recurrent:
            if self.settings.mem_len or self.settings.same_length:
                raise ContextLossError(
                    "a one-segment (sliding window) reading has no memory: mem_len must be 0 and "
                    "same_length False; read with memory (recurrent) to use them.")
        elif self.settings.mem_len < 1:
            raise ContextLossError(
                f"a segmented reading needs mem_len >= 1, got mem_len={self.settings.mem_len}.")

    @property
    def segment_len(self) -> Optional[int]:
        """Q of the segmented reading; None for the sliding window."""
        return self.settings.tgt_len if self.recurrent else None

    @property
    def mem_len(self) -> int:
        return self.settings.mem_len

    @property
    def clamp_len(self) -> int:
        return self.settings.clamp_len

    @property
    def same_length(self) -> bool:
        return self.settings.same_length


def recurrent_regime(config, tgt_len=None, mem_len=None, clamp_len=None, same_length=None):
    """The with-memory reading: segments of tgt_len with mem_len memory (None: the config's)."""
    return ContextRegime(ContextSettings.of_config(config, tgt_len, mem_len, clamp_len,
                                                   same_length), recurrent=True)


def window_regime(config, clamp_len=None):
    """The without-memory reading: the whole context as one segment (sliding window)."""
    return ContextRegime(ContextSettings.of_config(config, mem_len=0, clamp_len=clamp_len,
                                                   same_length=False))


def default_regime(config) -> ContextRegime:
    """`recurrent_regime` for a model trained with memory (mem_len > 0), else `window_regime`."""
    return recurrent_regime(config) if config.mem_len > 0 else window_regime(config)


def scored_positions(stream_length: int, context_lengths: Sequence[int],
                     num_tokens: Optional[int] = None) -> np.ndarray:
    """The contiguous positions max(c) .. max(c) + num_tokens - 1: the first tokens of a stream
    that have max(c) tokens before them (all of them when num_tokens is None).

    Returns:
      int64 [T].

    Raises:
      ContextLossError: num_tokens < 1, or the stream has no token with max(c) tokens before it.
    """
    if num_tokens is not None and num_tokens < 1:
        raise ContextLossError(f"the number of scored tokens must be >= 1, got {num_tokens}.")
    first = int(max(context_lengths))
    available = stream_length - first
    if available < 1:
        raise ContextLossError(
            f"the stream has {stream_length} tokens: at least {first + 1} are needed to score a "
            f"token with {first} tokens of context; use a longer split or shorter contexts.")
    count = available if num_tokens is None else min(int(num_tokens), available)
    return np.arange(first, first + count, dtype=np.int64)


def _check(model, tokens, positions, context_lengths, regime):
    """Validated (int32 tokens [S], int64 positions [T], int64 contexts [C])."""
    tokens = np.asarray(tokens)
    positions = np.asarray(positions)
    contexts = np.asarray(context_lengths)
    for name, array in (("tokens", tokens), ("positions", positions),
                        ("context_lengths", contexts)):
        if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
            raise ContextLossError(f"{name} must be a non-empty 1-D integer array, got shape "
                                   f"{array.shape} of {array.dtype}.")
    vocab = model.config.n_token
    if tokens.min() < 0 or tokens.max() >= vocab:
        raise ContextLossError(f"token ids must be in [0, {vocab}) for this model, got "
                               f"[{tokens.min()}, {tokens.max()}]; use the model's vocabulary.")
    if contexts.min() < 1:
        raise ContextLossError(f"context lengths must be >= 1, got {contexts.tolist()}.")
    if positions.min() < contexts.max() or positions.max() >= tokens.size:
        raise ContextLossError(
            f"scored positions must lie in [{contexts.max()}, {tokens.size}) so that every token "
            f"has {contexts.max()} tokens before it, got [{positions.min()}, {positions.max()}].")
    return tokens.astype(np.int32), positions.astype(np.int64), contexts.astype(np.int64)


def _window_batches(lengths: np.ndarray, batch_tokens: int, equal_lengths: bool = False):
    """Index arrays of windows (sorted by needed length) with count * longest <= batch_tokens
    (at least one window per batch), all of one length if equal_lengths."""
    order = np.argsort(lengths, kind="stable")
    batch = []
    for index in order:
        if batch and ((len(batch) + 1) * lengths[index] > batch_tokens
                      or (equal_lengths and lengths[index] != lengths[batch[0]])):
            yield np.asarray(batch)
            batch = []
        batch.append(index)
    if batch:
        yield np.asarray(batch)


def window_arrays(tokens: np.ndarray, starts: np.ndarray, length: int):
    """The windows of `length` tokens of one stream that start at `starts`, and their next tokens.

    Args:
      tokens: int [S] the token stream.
      starts: int [B] the first token of each window.
      length: W.

    Returns:
      (inputs int32 [B, W] = tokens[s .. s+W-1], labels int32 [B, W] = tokens[s+1 .. s+W]);
      past the end of the stream, inputs are 0 and labels -1 (not scored, and causally
      invisible to the positions that are).
    """
    index = starts[:, None] + np.arange(length + 1)[None, :]  # [B, W + 1]
    inside = index < tokens.size
    values = np.where(inside, tokens[np.minimum(index, tokens.size - 1)], -1)
    return np.maximum(values[:, :-1], 0).astype(np.int32), values[:, 1:].astype(np.int32)


class WindowReader:
    """Per-token NLL of batches of windows, each read from scratch under a `ContextRegime`.

    Keep one reader per (model, regime) to score several streams: the model is traced once.

    Args:
      model: a `TransformerXL` (called with training=False).
      regime: how the model reads a window.

    Call arguments:
      inputs, labels: int32 [B, W] windows and their next tokens (label -1: not scored).

    Returns:
      float32 [B, W]: position k holds -log P(labels[:, k] | inputs[:, 0..k]) (0 where the label
      is -1).
    """

    def __init__(self, model, regime: ContextRegime):
        self.model, self.regime = model, regime
        ids = tf.TensorSpec([None, None], tf.int32)
        mems = tuple(tf.TensorSpec([None, None, model.config.d_model], tf.float32)
                     for _ in range(model.config.n_layer))
        self._window = tf.function(self._read, input_signature=[ids, ids])
        self._segment = tf.function(self._read, input_signature=[ids, ids, mems])

    def _read(self, inputs, labels, mems=None):
        settings = self.regime.settings
        out = self.model(inputs, mems=None if mems is None else list(mems), labels=labels,
                         training=False, mem_len=settings.mem_len,
                         clamp_len=settings.clamp_len, same_length=settings.same_length)
        return out["nll"], tuple(out["mems"])

    def __call__(self, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        if not self.regime.recurrent:
            return self._window(inputs, labels)[0].numpy()
        q = self.regime.segment_len
        mems = tuple(self.model.init_mems(inputs.shape[0], self.regime.mem_len))
        pieces = []
        for begin in range(0, inputs.shape[1], q):
            nll, mems = self._segment(inputs[:, begin:begin + q], labels[:, begin:begin + q],
                                      mems)
            pieces.append(nll.numpy())
        return np.concatenate(pieces, axis=1)


def context_losses(model, tokens, positions, context_lengths: Sequence[int],
                   regime: Optional[ContextRegime] = None, batch_tokens: int = 8192,
                   progress: bool = False, reader: Optional[WindowReader] = None) -> np.ndarray:
    """l(c, t) for every context length c and scored position t, each with exactly c tokens.

    Args:
      model: a `TransformerXL` (called with training=False).
      tokens: int [S] the token stream.
      positions: int [T] the scored positions t (each >= max(c), < S), the same for every c.
      context_lengths: int [C] the context lengths c (>= 1).
      regime: how the model reads a context (None: `default_regime(model.config)`).
      batch_tokens: at most this many window positions per model call (B * W), at least one
        window per call.
      progress: show a progress bar of the windows read on stderr (`evaluation.Progress`).
      reader: a `WindowReader` of this model to reuse, with its regime (None: a new one).

    Returns:
      float32 [C, T]: row k holds -log P(x_t | x_{t-1}, ..., x_{t-c_k}) in nats.

    Raises:
      ContextLossError: bad tokens, positions, context lengths or regime (one line).
    """
    if reader is not None:
        if regime is not None and regime != reader.regime:
            raise ContextLossError(f"the reader reads with {reader.regime}, not {regime}; "
                                   "pass one of them.")
        regime = reader.regime
    regime = default_regime(model.config) if regime is None else regime
    tokens, positions, contexts = _check(model, tokens, positions, context_lengths, regime)
    starts = (positions[None, :] - contexts[:, None]).reshape(-1)  # [C * T]
    offsets = np.repeat(contexts - 1, positions.size)  # label index of x_t in its window
    absolute = model.absolute_positions
    # A window is a start (relative encodings) or a (start, length) pair (absolute ones).
    keys = starts * (contexts.max() + 1) + offsets if absolute else starts
    keys, which = np.unique(keys, return_inverse=True)
    windows = keys // (contexts.max() + 1) if absolute else keys
    needed = np.zeros(windows.size, np.int64)
    np.maximum.at(needed, which, offsets + 1)
    losses = np.zeros(starts.size, np.float32)
    reader = reader or WindowReader(model, regime)
    bar = Progress(windows.size, label="windows") if progress else None
    done = 0
    for batch in _window_batches(needed, batch_tokens, equal_lengths=absolute):
        inputs, labels = window_arrays(tokens, windows[batch], int(needed[batch].max()))
        nll = reader(inputs, labels)
        row_of = np.full(windows.size, -1)
        row_of[batch] = np.arange(batch.size)
        mine = np.nonzero(row_of[which] >= 0)[0]
        losses[mine] = nll[row_of[which[mine]], offsets[mine]]
        done += batch.size
        if bar:
            bar.update(done)
    if bar:
        bar.close(done)
        bar.stream.write("\n" if bar.tty else "")
    return losses.reshape(contexts.size, positions.size)


def losses_at_context(model, tokens, positions, context_length: int,
                      regime: Optional[ContextRegime] = None, batch_tokens: int = 8192,
                      reader: Optional[WindowReader] = None) -> np.ndarray:
    """float32 [T] l(c, t) at one context length c; see `context_losses`."""
    return context_losses(model, tokens, positions, [context_length], regime, batch_tokens,
                          reader=reader)[0]
