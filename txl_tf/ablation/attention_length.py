"""Scoring a token stream at a chosen attention length, with memory or with sliding windows.

Attention length A: the most keys a query attends to (memory included), the paper's "Attn Len".
  * With recurrence: the stream is read in segments of the training tgt_len Q with an
    evaluation memory of M' = A - Q states, carried over the whole stream from zeros that are
    attended to (`txl_tf.inference.evaluation.Evaluator`, as evaluate.py reads a split). Query
    i of a segment sees M' + i + 1 keys: the last one A. Training attention length: Q + M.
  * Without recurrence: windows of A tokens read without memory, sliding by S = A - A // 2;
    each window scores its last S tokens (the first window all of its tokens; the last window
    ends at the end of the row and scores those not yet scored), so every token is scored
    once, with A // 2 to A - 1 tokens of context after the first window (the reference's
    `ext_len` reading with ext_len = A // 2: A // 2 tokens are re-read as context and not
    predicted). Query i of a window sees i + 1 keys: the last one A. Training attention
    length: Q (a training segment is one window).
Both readings use same_length=False (with same_length a query would see a fixed number of
keys instead). Evaluation multiples k: A = k x the variant's training attention length (1x
reads as in training; for the no-recurrence models 1x is the half reading above).

Both readings cut the stream into the same B contiguous rows (row b = tokens
[b * R, (b + 1) * R) with R = N // B) and score the same tokens: every token of a row but its
first, B * (R - 1) in all.

Size glossary: B rows, R row length, A attention length, W window length, Q segment length.
"""
from typing import Tuple

import numpy as np

from txl_tf.inference.context_losses import WindowReader, window_arrays, window_regime
from txl_tf.inference.evaluation import Evaluator
from txl_tf.model.context_settings import ContextSettings


def stream_rows(tokens, rows: int) -> np.ndarray:
    """int32 [B, R]: `tokens` cut into `rows` contiguous rows of R = N // B tokens (the
    remainder dropped).

    Raises:
      ValueError: fewer than 2 tokens per row.
    """
    tokens = np.asarray(tokens, np.int32).reshape(-1)
    length = tokens.size // rows if rows >= 1 else 0
    if length < 2:
        raise ValueError(f"{tokens.size} tokens cannot be cut into {rows} rows of at least 2 "
                         "tokens; evaluate fewer rows or a longer split.")
    return tokens[:rows * length].reshape(rows, length)


def recurrent_loss(model, rows: np.ndarray, attn_len: int) -> Tuple[float, int]:
    """(summed NLL in nats, tokens scored) of `rows` read with memory at attention length
    `attn_len` (segments of the model's tgt_len Q, memory attn_len - Q).

    Raises:
      ValueError: attn_len <= Q (no memory left).
    """
    q = model.config.tgt_len
    if attn_len <= q:
        raise ValueError(f"attention length {attn_len} leaves no memory for segments of {q}.")
    inputs, labels = rows[:, :-1], rows[:, 1:]
    steps = -(-inputs.shape[1] // q)
    pad = steps * q - inputs.shape[1]
    inputs = np.pad(inputs, ((0, 0), (0, pad)))
    labels = np.pad(labels, ((0, 0), (0, pad)), constant_values=-1)
    batches = [{"inputs": inputs[:, s * q:(s + 1) * q], "labels": labels[:, s * q:(s + 1) * q]}
               for s in range(steps)]
    settings = ContextSettings.of_config(model.config, mem_len=attn_len - q, same_length=False)
    evaluator = Evaluator(model, settings)
    result = evaluator.evaluate(batches, rows.shape[0], steps, progress=False)
    return float(result.nll_sum), int(result.tokens)


def window_plan(length: int, attn_len: int) -> Tuple[np.ndarray, np.ndarray, int]:
    """The windows over one row of `length` targets: (starts int64 [K], first scored position
    within each window int64 [K], window length W = min(attn_len, length)).

    Window k ends at min(A + k S, length) (S = A - A // 2) and scores the positions from
    A + (k - 1) S (from 0 for k = 0) to its end.
    """
    width = min(attn_len, length)
    stride = attn_len - attn_len // 2
    ends = [width]
    while ends[-1] < length:
        ends.append(min(ends[-1] + stride, length))
    ends = np.asarray(ends, np.int64)
    starts = ends - width
    scored_from = np.concatenate([[0], ends[:-1]]) - starts
    return starts, scored_from, width


def window_batches(rows: np.ndarray, attn_len: int) -> Tuple[np.ndarray, np.ndarray]:
    """(inputs, labels) int32 [B * K, W] of the sliding windows of every row; labels are -1
    where a window does not score."""
    starts, scored_from, width = window_plan(rows.shape[1] - 1, attn_len)
    scored = np.arange(width)[None, :] >= scored_from[:, None]  # [K, W]
    windows, labels = zip(*(window_arrays(row, starts, width) for row in rows))
    labels = [np.where(scored, row_labels, -1) for row_labels in labels]
    return np.concatenate(windows).astype(np.int32), np.concatenate(labels).astype(np.int32)


def window_loss(model, rows: np.ndarray, attn_len: int,
                batch_size: int = 64) -> Tuple[float, int]:
    """(summed NLL in nats, tokens scored) of `rows` read without memory in sliding windows of
    `attn_len` tokens (see the module docstring), `batch_size` windows per model call, by the
    window reader of `txl_tf.inference.context_losses`."""
    inputs, labels = window_batches(rows, attn_len)
    reader = WindowReader(model, window_regime(model.config))
    nll_sum = 0.0
    for i in range(0, inputs.shape[0], batch_size):
        nll = reader(inputs[i:i + batch_size], labels[i:i + batch_size])  # 0 where not scored
        nll_sum += float(nll.astype(np.float64).sum())
    return nll_sum, int((labels >= 0).sum())


def train_attention_length(config) -> int:
    """A of training: tgt_len + mem_len (tgt_len without memory)."""
    return config.tgt_len + config.mem_len


def attention_loss(model, rows: np.ndarray, attn_len: int, recurrence: bool,
                   batch_size: int = 64) -> Tuple[float, int]:
    """(summed NLL, tokens) of `rows` at attention length `attn_len`: `recurrent_loss` for a
    model with recurrence, else `window_loss`."""
    if recurrence:
        return recurrent_loss(model, rows, attn_len)
    return window_loss(model, rows, attn_len, batch_size)
