"""How a loss is reported: its unit for the data's level, its text, its JSON fields, and the
verdict against the unigram baseline. Training (console lines, TensorBoard, train_summary.json)
and evaluation (evaluate.py's lines and JSON) both report through here.

Units of a mean NLL `loss` in nats per token:
  byte, char level: bpc = loss / ln 2 (bits per character), 4 decimals;
  word level: ppl = exp(loss) (perplexity), 2 decimals;
  any other level (a model directory that records none): bits_per_token = loss / ln 2.

The unigram baseline of a split is the entropy of its own token frequencies: the loss of the
best model that ignores context on that split. A language model whose loss is not below it
has learned nothing a word count does not know.

Example:
  >>> format_loss(4.6, "word")
  'loss 4.6000 | ppl 99.48'
  >>> verdict(7.4, 6.7, "word", "valid") is not None
  True
"""
import math
from typing import Optional

LN2 = math.log(2.0)
CHAR_LEVELS = ("byte", "char", "character")
WORD_LEVELS = ("word",)
_DECIMALS = {"bpc": 4, "ppl": 2, "bits_per_token": 4}
_SYMBOLS = {"byte": "bytes", "char": "characters", "character": "characters", "word": "words"}


def unit_name(level: Optional[str]) -> str:
    """'bpc' for byte and char levels, 'ppl' for word level, else 'bits_per_token'."""
    if level in CHAR_LEVELS:
        return "bpc"
    if level in WORD_LEVELS:
        return "ppl"
    return "bits_per_token"


def unit_value(loss: float, level: Optional[str]) -> float:
    """`loss` (nats per token) in the unit of `level`: bits, or exp(loss) for perplexity."""
    if unit_name(level) == "ppl":
        return math.exp(min(loss, 700.0))
    return loss / LN2


def format_value(loss: float, level: Optional[str]) -> str:
    """'ppl 99.48', 'bpc 1.2345' or 'bits_per_token 1.2345'."""
    unit = unit_name(level)
    return f"{unit} {unit_value(loss, level):.{_DECIMALS[unit]}f}"


def format_loss(loss: float, level: Optional[str]) -> str:
    """'loss 4.6000 | ppl 99.48': the loss in nats and in the unit of `level`."""
    return f"loss {loss:.4f} | {format_value(loss, level)}"


def loss_fields(loss: Optional[float], level: Optional[str], prefix: str = "") -> dict:
    """JSON fields of a loss: {prefix + 'loss': nats, prefix + unit: value} (None stays None)."""
    value = None if loss is None else unit_value(loss, level)
    return {f"{prefix}loss": loss, f"{prefix}{unit_name(level)}": value}


def _advice(level: Optional[str]) -> str:
    if level in WORD_LEVELS:
        return ("train longer (--train_steps), use a smaller vocabulary (prepare_data.py "
                "--min_freq or --max_size), more text, or --level=char")
    return "train longer (--train_steps) or on more text"


def verdict(loss: Optional[float], baseline: Optional[float], level: Optional[str],
            what: str) -> Optional[str]:
    """The line that says a model does no better than its split's unigram entropy, or None
    when it does (or nothing is known).

    Args:
      loss: mean NLL (nats per token) of the model on a split.
      baseline: the unigram entropy (nats per token) of the same split.
      level: the data's level (byte, char, word), for the unit and the advice.
      what: the split's name in the line, e.g. 'valid'.

    Returns:
      'verdict: the model does not beat counting words: ...' when `loss >= baseline`,
      else None.
    """
    if loss is None or baseline is None or loss < baseline:
        return None
    symbols = _SYMBOLS.get(level, "tokens")
    return (f"verdict: the model does not beat counting {symbols}: its {what} loss {loss:.4f} "
            f"({format_value(loss, level)}) is not below the unigram entropy of the {what} "
            f"{symbols}, {baseline:.4f} ({format_value(baseline, level)}); {_advice(level)}.")
