"""`RequestChecks`: every check of a serving request, run inside the graph before model work.

Each method returns graph assertions (a list of ops, or one op) that raise InvalidArgumentError
naming the problem and its fix; `after(checks, *tensors)` makes tensors wait for them. The
limits are the export's `ServingLimits` (export.py's flags), which bound the work of one row
and of one request; the same bounds and messages for every signature (`signatures.py` records
which limits each one checks).

Example (a signature's method of `ServingModule`):
  >>> checks = RequestChecks(config, limits, mem_len=64, text_level="char")
  >>> tokens = checks.after(checks.lengths(tokens, "tokens") + checks.ids(tokens, "tokens"),
  ...                       tokens)                           # int32 [B, Q], once valid
  >>> mems = checks.mems(tokens, mems)                        # [L, B, mem_len, D], once valid
"""
from typing import Optional

import tensorflow as tf

from txl_tf.generation import sampling
from txl_tf.serving.limits import ServingLimits


class RequestChecks:
    """The checks of the requests of one export.

    Args:
      config: the model's `TransformerXLConfig` (n_token, n_layer, d_model).
      limits: the export's `ServingLimits`.
      mem_len: the memory length of score / nll (mems hold exactly this many positions).
      text_level: the text codec's level ("byte", "char", "word"), or None without one: texts
        of a level other than bytes must be UTF-8.
    """

    def __init__(self, config, limits: ServingLimits, mem_len: int,
                 text_level: Optional[str] = None):
        self.config, self.limits, self.mem_len = config, limits, int(mem_len)
        self.text_level = text_level

    @staticmethod
    def after(checks, *tensors):
        """`tensors`, computed only once every op of `checks` has run (one tensor: itself)."""
        with tf.control_dependencies(checks):
            out = tuple(tf.identity(t) for t in tensors)
        return out if len(out) > 1 else out[0]

    def ids(self, ids, name):
        """ids (any shape): every one in [0, n_token)."""
        n = self.config.n_token
        return [tf.debugging.assert_non_negative(
                    ids, message=f"{name} must be token ids >= 0 (vocabulary size {n})"),
                tf.debugging.assert_less(
                    ids, n, message=f"{name} must be token ids < {n}, the vocabulary size")]

    def batch(self, batch, name):
        """batch (int32 []): at most max_batch_size rows."""
        return tf.debugging.assert_less_equal(
            batch, self.limits.max_batch_size,
            message=self.limits.message("max_batch_size", f"the batch size of {name}"))

    def budget(self, total, name, what):
        """total: a request's tokens or bytes (int64 []) against the limit `name`."""
        return tf.debugging.assert_less_equal(
            tf.cast(total, tf.int64), tf.constant(getattr(self.limits, name), tf.int64),
            message=self.limits.message(name, what))

    @staticmethod
    def rows(batch, name, inputs):
        """Every input of `inputs` ({name: tensor}) has `batch` rows (dimension 0)."""
        return [tf.debugging.assert_equal(
                    tf.shape(value)[0], batch,
                    message=f"{key} must have one row per row of {name} (batch-major inputs: "
                            f"the batch is dimension 0 of every input); got a different "
                            f"number of rows")
                for key, value in inputs.items()]

    def lengths(self, tokens, name):
        """tokens [B, Q]: B <= max_batch_size, 1 <= Q <= max_seq_len."""
        length = tf.shape(tokens)[1]
        return [self.batch(tf.shape(tokens)[0], name),
                tf.debugging.assert_positive(
                    length, message=f"{name} is empty: give at least one token per row"),
                tf.debugging.assert_less_equal(
                    length, self.limits.max_seq_len,
                    message=self.limits.message("max_seq_len", f"the length of {name}"))]

    def request_tokens(self, total, what="the tokens of the request (B x Q)"):
        """total (int []): the tokens one request makes the model process."""
        return self.budget(total, "max_request_tokens", what)

    def mems(self, tokens, mems):
        """mems [B, L, mem_len, D] -> the same, layer-major [L, B, mem_len, D], once valid."""
        c, mem_len = self.config, self.mem_len
        shape = tf.shape(mems)
        expected = tf.stack([tf.shape(tokens)[0], c.n_layer, shape[2], c.d_model])
        checks = [
            tf.debugging.assert_equal(
                shape, expected,
                message=f"mems must be float32 [batch (that of tokens), n_layer={c.n_layer}, "
                        f"mem_len={mem_len}, d_model={c.d_model}]; start from "
                        "init_mems(streams) and pass back the mems of the previous call. Got "
                        "mems of shape", summarize=4),
            tf.debugging.assert_equal(
                shape[2], mem_len,
                message=f"mems must hold exactly mem_len={mem_len} positions in this export "
                        "(what init_mems and score return), so that requests can be batched "
                        "together; got mems of length"),
            tf.debugging.Assert(
                tf.reduce_all(tf.math.is_finite(mems)),
                ["mems hold NaN or Inf values; pass back the mems of the previous call "
                 "unchanged, or start from init_mems(streams)"])]
        return tf.transpose(self.after(checks, mems), [1, 0, 2, 3])

    def sampling(self, batch, name, settings):
        """The per-row sampling inputs (num_tokens, temperature, top_k, top_p, seed [B])."""
        num_tokens, temperature, top_k, top_p, seed = settings
        rows = dict(num_tokens=num_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                    seed=seed)
        return self.rows(batch, name, rows) + [
            tf.debugging.assert_non_negative(num_tokens, message="num_tokens must be >= 0"),
            tf.debugging.assert_less_equal(
                num_tokens, self.limits.max_num_tokens,
                message=self.limits.message("max_num_tokens", "num_tokens"))
        ] + sampling.setting_checks(temperature, top_k, top_p)

    def texts(self, text):
        """The raw texts string [B], before they are tokenized: UTF-8 (unless the codec reads
        bytes), B <= max_batch_size, each within max_text_bytes, all within
        max_request_bytes."""
        length = tf.strings.length(text)
        checks = []
        if (self.text_level or "byte") != "byte":  # bytes need no decoding
            same = tf.equal(tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore"),
                            text)
            checks.append(tf.debugging.Assert(
                tf.reduce_all(same), ["a text of the request is not UTF-8 (this model reads "
                                      "characters or words); send UTF-8 text"]))
        return checks + [
            self.batch(tf.size(text), "text"),
            tf.debugging.assert_less_equal(
                length, self.limits.max_text_bytes,
                message=self.limits.message("max_text_bytes", "the UTF-8 length of a text")),
            self.budget(tf.reduce_sum(tf.cast(length, tf.int64)), "max_request_bytes",
                        "the UTF-8 bytes of all texts of the request")]

    def prompt_tokens(self, counts, work):
        """A text request's prompts after tokenizing: counts int32 [B] each in
        [1, max_seq_len]; work (int64 []): the prompts' tokens plus every num_tokens."""
        return [
            tf.debugging.assert_positive(
                counts, message="the prompt has no tokens: give at least one symbol"),
            tf.debugging.assert_less_equal(
                counts, self.limits.max_seq_len,
                message=self.limits.message("max_seq_len", "the token count of a prompt")),
            self.request_tokens(work, "the tokens of the request (prompt + num_tokens of every "
                                      "text)")]

    def scored_texts(self, ids):
        """score_text's tokenized texts, ragged int32 [B, (n)]: each of at least 2 tokens, all
        within max_request_tokens."""
        return [
            tf.debugging.assert_greater_equal(
                ids.row_lengths(), tf.constant(2, tf.int64),
                message="score_text needs texts of at least 2 tokens (the first token is only "
                        "context; each later one is scored): got a text whose token count is"),
            self.request_tokens(tf.size(ids.flat_values), "the tokens of all texts of the "
                                                          "request")]
