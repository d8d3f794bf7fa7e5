"""`generate(stop_token_ids=...)` as keras-hub's `CausalLM.generate`: where a row ends.

`stop_token_ids` is "auto" (the default), None or token ids:
  * "auto": the vocabulary's end-of-line symbol where its text rules have one (`<eos>` at word
    level, lm1b's `<S>`); char- and byte-level vocabularies have none (their "\\n" is text), and
    a model without a preprocessor has no vocabulary: no stop token (keras-hub refuses "auto"
    without a preprocessor; ids in, ids out is txl-tf's own path).
  * None: every row runs to max_length.
  * ids (an int or a sequence of ints in [0, V)): each one ends a row.

A row ends at its first generated stop token (a stop token of the prompt ends nothing). The
generation loop ends once every row has ended (`graph_loop.decode`). As
keras-hub's outputs: text keeps the stop token's text unless it is one of the vocabulary's
special symbols (keras-hub strips its special tokens, its end token among them); ids keep their
[B, max_length] shape, the positions after a row's stop token holding that stop token (the pad
of keras-hub's GPT-2, whose pad is its end token).

Example:
  >>> ids = stop_ids_of("auto", preprocessor, n_token=23)      # (0,): the id of <eos>
  >>> pad_after_stop(np.array([4, 0, 7, 9]), ids)              # [4, 0, 0, 0]
  >>> until_stop(np.array([4, 0, 7, 9]), ids, drop=ids)        # [4]: the text of "w2"
"""
import numbers

import numpy as np

from txl_tf.generation.errors import CausalLMInputError
from txl_tf.generation.sampler import NAMED

AUTO = "auto"


def end_of_line_ids(preprocessor) -> tuple:
    """The ids of the vocabulary's end-of-line symbols (its text rules' eos / double_eos);
    () without a preprocessor or such a symbol."""
    if preprocessor is None:
        return ()
    vocab, rules = preprocessor.model_vocab.vocab, preprocessor.model_vocab.rules
    symbols = [s for s in (rules.eos, rules.double_eos) if s and s in vocab]
    return tuple(sorted({vocab.id_of(s) for s in symbols}))


def special_ids(preprocessor) -> tuple:
    """The ids of the vocabulary's special symbols (what keras-hub strips from text)."""
    if preprocessor is None:
        return ()
    vocab = preprocessor.model_vocab.vocab
    return tuple(vocab.id_of(s) for s in vocab.specials if s in vocab)


def stop_ids_of(stop_token_ids, preprocessor, n_token: int) -> tuple:
    """The stop token ids of `stop_token_ids` ("auto", None, an int or ints), checked.

    Raises:
      CausalLMInputError: another string or type, a non-integer id, an id outside [0, n_token).
    """
    if stop_token_ids is None:
        return ()
    if isinstance(stop_token_ids, str):
        if stop_token_ids in NAMED:
            raise CausalLMInputError(f"stop_token_ids={stop_token_ids!r} names a sampler: "
                                     "generate's third argument is stop_token_ids, as "
                                     f"keras-hub's; pass sampler={stop_token_ids!r}.")
        if stop_token_ids != AUTO:
            raise CausalLMInputError(f"stop_token_ids must be 'auto', None or token ids, got "
                                     f"{stop_token_ids!r}.")
        return end_of_line_ids(preprocessor)
    ids = stop_token_ids
    if isinstance(ids, numbers.Integral) and not isinstance(ids, bool):
        ids = [ids]
    elif isinstance(ids, np.ndarray):
        ids = ids.reshape([-1]).tolist()
    if not isinstance(ids, (list, tuple, set, frozenset)) or not all(
            isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in ids):
        raise CausalLMInputError(f"stop_token_ids must be 'auto', None, an int or a sequence "
                                 f"of ints, got {stop_token_ids!r}.")
    bad = [int(i) for i in ids if not 0 <= i < n_token]
    if bad:
        raise CausalLMInputError(f"stop_token_ids must be in [0, {n_token}) (the model's "
                                 f"n_token), got {bad[0]}.")
    return tuple(sorted({int(i) for i in ids}))


def first_stop(row, stop_ids) -> int:
    """The index of the first stop token of int [n] `row`, or n when none."""
    hits = np.flatnonzero(np.isin(row, stop_ids)) if stop_ids else []
    return int(hits[0]) if len(hits) else len(row)


def pad_after_stop(row, stop_ids) -> np.ndarray:
    """int32 [n]: `row` with every position after its first stop token holding that token."""
    row = np.array(row, np.int32)
    end = first_stop(row, stop_ids)
    row[end + 1:] = row[end] if end < len(row) else 0
    return row


def until_stop(row, stop_ids, drop=()) -> np.ndarray:
    """int32 [<= n]: `row` up to its first stop token, that token left out if it is in
    `drop`."""
    row = np.asarray(row, np.int32)
    end = first_stop(row, stop_ids)
    if end == len(row):
        return row
    return row[:end] if int(row[end]) in drop else row[:end + 1]
