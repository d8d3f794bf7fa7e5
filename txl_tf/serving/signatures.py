"""The SavedModel's signatures, one record each: `SIGNATURES`.

A record names everything about one signature that the rest of the export reads: its input
specs, the `ServingModule` method that computes it, one representative request (TF Serving's
warmup, `warmup.py`), the `ServingLimits` fields its in-graph checks enforce, whether it needs
the text codec, and the other names it is served under. `ServingModule` defines its
`tf.function`s from these records, `warmup.py` builds its requests from them and the export
bounds the warmup count by `signature_count()`. A new signature is one record here plus its
method on `ServingModule` (docs/serving.md describes the inputs and outputs).

Example:
  >>> [s.name for s in SIGNATURES]
  ['score', 'nll', 'init_mems', 'generate', 'generate_text', 'score_text']
  >>> signature_count()  # with serving_default, score's other name
  7
"""
import dataclasses
from typing import Callable, Tuple

import numpy as np
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Signature:
    """One signature of the SavedModel.

    Attributes:
      name: the signature's name (the `ServingModule` attribute holding its tf.function).
      method: the `ServingModule` method the tf.function runs.
      specs: config -> the input `tf.TensorSpec`s, in the method's argument order.
      warmup: (module, batch) -> {input name: numpy array}, one request with `batch` rows.
      limits: the `ServingLimits` fields its checks enforce.
      text: needs the export's text codec (absent from a vocabulary-less export).
      aliases: other names it is served under (e.g. serving_default).
    """
    name: str
    method: str
    specs: Callable[[object], list]
    warmup: Callable[[object, int], dict]
    limits: Tuple[str, ...]
    text: bool = False
    aliases: Tuple[str, ...] = ()


def _mems_spec(config):
    return tf.TensorSpec([None, config.n_layer, None, config.d_model], tf.float32, name="mems")


_TOKENS = tf.TensorSpec([None, None], tf.int32, name="tokens")
_TEXT = tf.TensorSpec([None], tf.string, name="text")
_SAMPLING = [tf.TensorSpec([None], tf.int32, name="num_tokens"),
             tf.TensorSpec([None], tf.float32, name="temperature"),
             tf.TensorSpec([None], tf.int32, name="top_k"),
             tf.TensorSpec([None], tf.float32, name="top_p"),
             tf.TensorSpec([None], tf.int64, name="seed")]


# -- warmup requests: rows of the length clients send, within the export's limits ---------
def _lengths(module, batch) -> tuple:
    """(tokens length, prompt length, num_tokens) of a warmup request of `batch` rows:
    score / nll rows of tgt_len tokens, generate prompts of gen_seg_len, 4 new tokens, all cut
    to the export's limits."""
    limits = module.limits
    length = max(1, min(module.settings.scoring.tgt_len, limits.max_seq_len,
                        limits.max_request_tokens // batch))
    prompt = max(1, min(module.settings.gen_seg_len, limits.max_seq_len))
    num_tokens = max(0, min(limits.max_num_tokens, 4,
                            limits.max_request_tokens // batch - prompt))
    return length, prompt, num_tokens


def _ids(module, batch, length):
    """int32 [batch, length]: the ids 0, 1, 2, ... modulo the vocabulary size."""
    return (np.arange(batch * length, dtype=np.int32) % module.config.n_token).reshape(
        batch, length)


def _sampling(module, batch) -> dict:
    num_tokens = _lengths(module, batch)[2]
    return dict(num_tokens=np.full([batch], num_tokens, np.int32),
                temperature=np.full([batch], 1.0, np.float32),
                top_k=np.full([batch], 0, np.int32), top_p=np.full([batch], 1.0, np.float32),
                seed=np.arange(batch, dtype=np.int64))


def _mems(module, batch):
    c = module.config
    return np.zeros([batch, c.n_layer, module.context.mem_len, c.d_model], np.float32)


def _text(module, batch):
    """string [batch]: a text of the model's vocabulary (max(prompt, 2) ids decoded by the
    export's text codec, cut to max_text_bytes) in every row."""
    ids = np.arange(1, max(_lengths(module, batch)[1], 2) + 1, dtype=np.int32)
    text = module.text_codec.decode(tf.constant(ids % module.config.n_token)).numpy()
    return np.array([text[:module.limits.max_text_bytes]] * batch, object)


def _score_request(module, batch):
    return dict(tokens=_ids(module, batch, _lengths(module, batch)[0]),
                mems=_mems(module, batch))


def _nll_request(module, batch):
    tokens = _ids(module, batch, _lengths(module, batch)[0])
    return dict(tokens=tokens, labels=np.roll(tokens, -1, axis=1), mems=_mems(module, batch))


_ID_LIMITS = ("max_batch_size", "max_seq_len", "max_request_tokens")
_TEXT_LIMITS = ("max_batch_size", "max_text_bytes", "max_request_bytes", "max_request_tokens")

SIGNATURES = (
    Signature("score", "_score", lambda c: [_TOKENS, _mems_spec(c)], _score_request,
              _ID_LIMITS, aliases=("serving_default",)),
    Signature("nll", "_nll",
              lambda c: [_TOKENS, tf.TensorSpec([None, None], tf.int32, name="labels"),
                         _mems_spec(c)],
              _nll_request, _ID_LIMITS),
    Signature("init_mems", "_init_mems",
              lambda c: [tf.TensorSpec([None], tf.int32, name="streams")],
              lambda module, batch: dict(streams=np.zeros([batch], np.int32)),
              ("max_batch_size",)),
    Signature("generate", "_generate",
              lambda c: [tf.TensorSpec([None, None], tf.int32, name="prompt")] + _SAMPLING,
              lambda module, batch: dict(
                  prompt=_ids(module, batch, _lengths(module, batch)[1]),
                  **_sampling(module, batch)),
              _ID_LIMITS + ("max_num_tokens",)),
    Signature("generate_text", "_generate_text", lambda c: [_TEXT] + _SAMPLING,
              lambda module, batch: dict(text=_text(module, batch), **_sampling(module, batch)),
              _TEXT_LIMITS + ("max_seq_len", "max_num_tokens"), text=True),
    Signature("score_text", "_score_text", lambda c: [_TEXT],
              lambda module, batch: dict(text=_text(module, batch)), _TEXT_LIMITS, text=True),
)


def by_name(name) -> Signature:
    """The record served as `name` (its name or an alias).

    Raises:
      ValueError: no signature is served as `name`.
    """
    for record in SIGNATURES:
        if name == record.name or name in record.aliases:
            return record
    raise ValueError(f"no serving signature named {name!r}; the signatures are "
                     f"{', '.join(sorted(n for s in SIGNATURES for n in (s.name,) + s.aliases))}.")


def signature_count() -> int:
    """The most signatures an export serves (every record with its aliases)."""
    return sum(1 + len(record.aliases) for record in SIGNATURES)
