"""Relative effective context length (RECL) of a model group (Dai et al. 2019, Appendix C).

Size glossary: N models in the group, C context lengths, T scored tokens.

The input is `losses[i, k, t]` = l_i(c_k, t) = -log P_i(x_t | x_{t-1}, ..., x_{t-c_k}), the loss in
nats of model i on scored token t when it sees exactly the c_k previous tokens (see
`txl_tf.inference.context_losses`). The context lengths are the search grid c_0, c_0 + Delta,
c_0 + 2 Delta, ...: evenly spaced, their spacing is the step Delta.

Definitions of the paper, for a short context c and a long one c' >= c:
  * baseline: b(c, t) = min over the models of l_i(c, t), the best short-context loss of the group
    on each token;
  * hard tokens: the set T(c) of the top-r fraction of tokens with the largest b(c, t);
  * relative loss: f_i(c, c') = mean over t in T(c) of min(b(c, t), l_i(c', t));
  * relative gain: g_i(c, c') = (exp f_i(c, c) - exp f_i(c, c')) / exp f_i(c, c);
  * search: start at c = c_0, c' = c + Delta; while g_i(c, c') >= 0.01 move to c = c',
    c' = c + Delta; RECL is the first c whose gain falls below the threshold.
"""
import dataclasses
import numbers
from typing import Dict, Sequence

import numpy as np


RECL_RATIOS = (0.1, 0.5, 1.0)
RECL_THRESHOLD = 0.01  # the paper's


class ReclInputError(ValueError):
    """Loss arrays, context lengths or ratios the RECL search cannot use."""


@dataclasses.dataclass(frozen=True)
class Recl:
    """RECL of every model of a group at one ratio r.

    Attributes:
      ratio: r, the fraction of hardest tokens compared.
      context_lengths: int [C] the grid c_0, c_0 + Delta, ...
      gains: float64 [N, C - 1] g_i(c_k, c_{k+1}) for every step of the grid.
      lengths: int [N] the RECL of each model.
      censored: bool [N] True where the gain stayed >= the threshold up to the longest context
        of the grid: the search ran out of grid, so the RECL is only a lower bound.
    """

    ratio: float
    context_lengths: np.ndarray
    gains: np.ndarray
    lengths: np.ndarray
    censored: np.ndarray


def check_context_lengths(context_lengths) -> np.ndarray:
    """The grid as int64 [C]; call it before computing losses to fail early.

    Raises:
      ReclInputError: fewer than two lengths, or not positive, increasing, evenly spaced
        integers.
    """
    contexts = np.asarray(context_lengths)
    if contexts.ndim != 1 or contexts.size < 2:
        raise ReclInputError(
            f"RECL needs at least two context lengths (c and c + Delta), got "
            f"{contexts.tolist()}.")
    if not np.issubdtype(contexts.dtype, np.integer):
        raise ReclInputError(f"context lengths must be integers, got {contexts.tolist()}.")
    steps = np.diff(contexts)
    if contexts[0] < 1 or np.any(steps <= 0) or np.any(steps != steps[0]):
        raise ReclInputError(
            f"context lengths must be positive, increasing and evenly spaced (c_0, c_0 + Delta, "
            f"c_0 + 2 Delta, ...), got {contexts.tolist()}.")
    return contexts.astype(np.int64)


def check_inputs(losses, context_lengths) -> tuple:
    """Validated (float64 [N, C, T] losses, int64 [C] context lengths).

    Raises:
      ReclInputError: not [N, C, T] with N, T >= 1; C != len(context_lengths); a bad grid (see
        `check_context_lengths`); a loss that is not finite.
    """
    losses = np.asarray(losses, np.float64)
    if losses.ndim != 3 or 0 in losses.shape:
        raise ReclInputError(
            f"losses must be a non-empty [models, contexts, tokens] array, got shape "
            f"{losses.shape}.")
    count = np.size(context_lengths)
    if count != losses.shape[1]:
        raise ReclInputError(
            f"losses hold {losses.shape[1]} context lengths (axis 1) but {count} "
            "context lengths were given; pass one length per row of axis 1.")
    contexts = check_context_lengths(context_lengths)
    if not np.all(np.isfinite(losses)):
        raise ReclInputError("losses must all be finite (a NaN or infinite loss was given).")
    return losses, contexts


def check_ratio(ratio: float) -> float:
    """`ratio` as a float in (0, 1]; raises ReclInputError otherwise."""
    if isinstance(ratio, bool) or not isinstance(ratio, numbers.Real) or not 0.0 < ratio <= 1.0:
        raise ReclInputError(f"the ratio r must be in (0, 1], got {ratio!r}.")
    return float(ratio)


def baseline(losses: np.ndarray) -> np.ndarray:
    """b(c, t) = min over the models i of l_i(c, t): [N, C, T] -> [C, T]."""
    return np.min(losses, axis=0)


def hard_tokens(short_baseline: np.ndarray, ratio: float) -> np.ndarray:
    """T(c): indices of the top-r positions t with the largest b(c, t).

    Args:
      short_baseline: float [T] b(c, t) at the short context c.
      ratio: r in (0, 1]; |T(c)| = max(1, round(r * T)). Ties keep the earlier token.

    Returns:
      int [|T(c)|] token indices, hardest first.
    """
    count = max(1, int(round(ratio * short_baseline.size)))
    return np.argsort(-short_baseline, kind="stable")[:count]


def relative_loss(losses: np.ndarray, short: int, long: int, ratio: float) -> np.ndarray:
    """f_i(c, c') = (1 / |T(c)|) sum over t in T(c) of min(b(c, t), l_i(c', t)), every model i.

    Args:
      losses: float [N, C, T] l_i(c_k, t).
      short, long: grid indices of c and c' (long >= short).
      ratio: r, which selects T(c).

    Returns:
      float64 [N].
    """
    short_baseline = baseline(losses)[short]  # [T]
    tokens = hard_tokens(short_baseline, ratio)
    capped = np.minimum(short_baseline[tokens][None, :], losses[:, long, tokens])  # [N, |T|]
    return capped.mean(axis=1)


def relative_gain(losses: np.ndarray, short: int, long: int, ratio: float) -> np.ndarray:
    """g_i(c, c') = (exp f_i(c, c) - exp f_i(c, c')) / exp f_i(c, c), every model i.

    The relative perplexity reduction, computed as -expm1(f_i(c, c') - f_i(c, c)), the same
    quantity without overflow. It lies in [0, 1) because f_i(c, c') <= f_i(c, c).

    Returns:
      float64 [N].
    """
    at_short = relative_loss(losses, short, short, ratio)
    at_long = relative_loss(losses, short, long, ratio)
    return -np.expm1(at_long - at_short)


def relative_effective_context_length(losses, context_lengths: Sequence[int], ratio: float,
                                      threshold: float = RECL_THRESHOLD) -> Recl:
    """RECL of every model of a group at one ratio r (Appendix C).

    For each model i the search starts at c = c_0, c' = c + Delta; if g_i(c, c') < threshold it
    returns RECL = c, otherwise it sets c = c', c' = c + Delta and tests again. When the gain
    stays >= threshold up to the longest context of the grid, the RECL is that longest context
    and `censored` says it is a lower bound.

    Args:
      losses: float [N, C, T] l_i(c_k, t) in nats, the same T tokens at every context length.
      context_lengths: int [C] c_0, c_0 + Delta, ... (evenly spaced, increasing).
      ratio: r in (0, 1].
      threshold: the gain below which a longer context no longer counts (0.01 in the paper).

    Returns:
      a `Recl`.

    Raises:
      ReclInputError: bad shapes, context lengths or ratio (one line naming the problem).
    """
    losses, contexts = check_inputs(losses, context_lengths)
    ratio = check_ratio(ratio)
    gains = np.stack([relative_gain(losses, k, k + 1, ratio)
                      for k in range(contexts.size - 1)], axis=1)  # [N, C - 1]
    below = gains < threshold
    censored = ~below.any(axis=1)
    first_below = np.where(censored, contexts.size - 1, np.argmax(below, axis=1))
    return Recl(ratio=ratio, context_lengths=contexts, gains=gains,
                lengths=contexts[first_below], censored=censored)


def recl_table(losses, context_lengths: Sequence[int], ratios: Sequence[float] = RECL_RATIOS,
               threshold: float = RECL_THRESHOLD) -> Dict[float, Recl]:
    """`relative_effective_context_length` at every ratio (r = 0.1, 0.5, 1.0 as Table 8).

    Returns:
      dict ratio -> `Recl`, in the order of `ratios`.
    """
    return {float(r): relative_effective_context_length(losses, context_lengths, r, threshold)
            for r in ratios}


def recl_rows(names: Sequence[str], table: Dict[float, Recl]) -> list:
    """One dict per model for a JSON line: {"model", "recl": {ratio: length}, "censored": {...}}.

    Args:
      names: [N] model names, in the order of the losses' axis 0.
      table: the result of `recl_table`.
    """
    rows = []
    for i, name in enumerate(names):
        rows.append({"model": name,
                     "recl": {str(r): int(result.lengths[i]) for r, result in table.items()},
                     "censored": {str(r): bool(result.censored[i])
                                  for r, result in table.items()}})
    return rows


def format_recl_table(names: Sequence[str], table: Dict[float, Recl]) -> str:
    """Table 8 as text: model | RECL at each r; a censored RECL is written ">=c".

    Example:
      model        r=0.1  r=0.5  r=1.0
      xl            >=96     64     32
    """
    width = max([len("model")] + [len(n) for n in names])
    header = f"{'model':<{width}}" + "".join(f"  {f'r={r}':>7}" for r in table)
    lines = [header]
    for i, name in enumerate(names):
        cells = [(">=" if result.censored[i] else "") + str(int(result.lengths[i]))
                 for result in table.values()]
        lines.append(f"{name:<{width}}" + "".join(f"  {cell:>7}" for cell in cells))
    return "\n".join(lines)
