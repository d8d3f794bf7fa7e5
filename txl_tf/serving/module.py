"""`ServingModule`: the `tf.Module` that `runners/export.py` saves as a SavedModel; its
signatures are defined from their records (`signatures.SIGNATURES`).

Signature layout version 2 (`SIGNATURE_VERSION`): every input and output of every signature
is batch-major (the batch B on dimension 0), and a row's outputs depend on that row's inputs
only. So TF Serving's request batching, which concatenates the inputs of several requests
along dimension 0 and splits the outputs along dimension 0, returns to each request what it
would get alone (L n_layer, D d_model fixed; B batch and Q length dynamic; mem_len fixed at
export):
  score / serving_default:
      tokens int32 [B, Q], mems float32 [B, L, mem_len, D]
      -> log_probs float32 [B, Q, V], mems float32 [B, L, mem_len, D]
  nll:  tokens int32 [B, Q], labels int32 [B, Q], mems [B, L, mem_len, D]
      -> nll float32 [B, Q] (nats), mems
  init_mems: streams int32 [B] (one entry per stream; the values are not used)
      -> mems float32 [B, L, mem_len, D] of zeros (the reference's evaluation start),
         mem_len int32 [B]
  generate: prompt int32 [B, P], and per row num_tokens int32 [B], temperature float32 [B],
      top_k int32 [B], top_p float32 [B], seed int64 [B]
      -> tokens int32 [B, max_num_tokens] (row b: its num_tokens[b] tokens, then -1),
         lengths int32 [B] (= num_tokens); with `gen_jit_compile` the same tokens from one XLA
         program (`fixed_loop.generate_fixed`)
  generate_text (text signatures, need tensorflow_text ops): text string [B] and the
      per-row sampling inputs -> text string [B] (the continuation), prompt_tokens int32 [B]
  score_text: text string [B] -> loss float32 [B] (nats per scored token), tokens int64 [B],
      nll_sum float32 [B]; each text is scored as `evaluate.py --batch_size=1
      --last_segment=pad` scores it (zero memory of mem_len, segments of tgt_len).
The memory always holds exactly mem_len positions, so that the mems of any two requests can
be concatenated; `tokens` / `prompt` batch together only with requests of the same length.
Row b of a sampled generation uses the stateless seeds (seed[b], t) for its token t, whatever
rows share its batch.
The vocabulary file is an asset (assets/vocab.txt); `vocab_file` holds its path after loading.
The text signatures tokenize with a text codec given by the exporter (runners/export.py gives
`tf_records.text.graph.GraphText`): any `tf.Module` with `encode(text [], continuing) -> int32
ids [n]` and `decode(ids [n]) -> string []`, written as graph code (see below).
The signatures are traced without autograph: their code, the generation loops and the text
codec take every decision on a tensor through TensorFlow's own control flow (`tf.while_loop`,
`tf.cond`, `tf.map_fn`, `tf.where`), and Python's `if` / `for` only on Python values (the
config, the limits, the codec's level and rules). Autograph would convert all of that code,
TensorFlow Text's included, at every export, for the same graph.

Every request is validated inside the graph before any model work
(`request_checks.RequestChecks`; InvalidArgumentError naming the problem): ids in [0, n_token)
in every id input; mems of shape [B, L, mem_len, D]; one row per batch entry in every input; at
least one token in tokens / prompt and at least 2 in a score_text text (one to predict from, one
to predict); sampling settings (temperature finite and >= 0, top_k >= 0, 0 < top_p <= 1); and
the export-time limits (`ServingLimits`, the flags of export.py) that bound the work of one row
and of one request: a text request is checked for its bytes before it is tokenized and for its
tokens before the model runs.
"""

import tensorflow as tf

from txl_tf.generation import fixed_loop, graph_loop
from txl_tf.generation.sampler import Sampler
from txl_tf.inference import evaluation
from txl_tf.model.context_settings import ContextSettings
from txl_tf.serving import signatures
from txl_tf.serving.limits import ServingLimits
from txl_tf.serving.request_checks import RequestChecks
from txl_tf.serving.serving_settings import ServingSettings


SIGNATURE_VERSION = 2  # the batch-major layout described above


class ServingModule(tf.Module):
    """Wraps a `TransformerXL` (and optionally its vocabulary and text codec) for export.

    Args:
      model: the model (called with training=False).
      settings: the `ServingSettings`: run settings of score / nll / score_text (their tgt_len:
        segment length of score_text) and of the generate signatures (same_length off). With
        its gen_jit_compile the generate signatures run their sampling loop as one XLA program
        (`fixed_loop.generate_fixed`: the fixed memory, the prompt right-padded to gen_seg_len
        times a power of two, a buffer of max_num_tokens; the same tokens; XLA compiles once
        per batch size and prompt bucket on the server, which needs XLA's JIT).
      vocab_file: the model's vocabulary file, shipped as the `vocab_file` asset; None for a
        vocabulary-less export.
      text_codec: the in-graph tokenizer of the text signatures generate_text / score_text
        (see the module docstring); None: no text signatures.
      limits: a `ServingLimits` (default: its defaults).
    """

    def __init__(self, model, settings: ServingSettings, vocab_file=None, text_codec=None,
                 limits=None):
        super().__init__(name="txl_serving")
        c = model.config
        # The Keras model itself is not a dependency of the module: only the tf.Variables
        # behind its weights are (see `_track_weights`).
        object.__setattr__(self, "model", model)
        self.weights = self._track_weights(model)
        self.config = c
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "limits", limits or ServingLimits())
        object.__setattr__(self, "checks", RequestChecks(
            c, self.limits, settings.scoring.mem_len, getattr(text_codec, "level", None)))
        if vocab_file is not None:
            self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.text_codec = text_codec
        self._define_signatures()

    @property
    def context(self) -> ContextSettings:
        """The run settings of score / nll / init_mems / score_text."""
        return self.settings.scoring

    @property
    def gen_context(self) -> ContextSettings:
        """The run settings of the generate signatures (tgt_len: the prompt segment length)."""
        return self.settings.generation

    def _define_signatures(self):
        """One tf.function per record of `signatures.SIGNATURES` (the text ones only with a
        text codec), held in the attribute of the record's name; traced as written, without
        autograph (the module docstring)."""
        for record in self._records():
            setattr(self, record.name, tf.function(getattr(self, record.method),
                                                   input_signature=record.specs(self.config),
                                                   autograph=False))

    def _records(self) -> list:
        """The `Signature` records this module serves."""
        return [record for record in signatures.SIGNATURES
                if self.text_codec is not None or not record.text]

    @staticmethod
    def _track_weights(model) -> dict:
        """The tf.Variables that hold the model's weights, by Keras path.

        The signatures read these tf.Variables (a Keras 3 variable wraps one). Saving the
        Keras variables instead would write, for each, a second, differently named tf.Variable
        that the SavedModel's restore op fills while the graph's functions still read the
        original one, so the session-based loader (TF Serving, saved_model_cli) would run
        them on uninitialised variables. Tracking the wrapped variables makes the restore op
        fill exactly the variables the functions read, with one copy of each weight.

        Returns:
          {path: tf.Variable}, e.g. {"transformer_xl/r_r_bias": <tf.Variable [H, d_head]>}.
        """
        weights = {}
        for variable in model.variables:
            inner = getattr(variable, "value", variable)
            if not isinstance(inner, tf.Variable):
                raise TypeError(f"{variable.path} is not backed by a tf.Variable.")
            weights[variable.path] = inner
        return weights

    def signatures(self) -> dict:
        """{served name: tf.function}: every record's name and aliases."""
        return {name: getattr(self, record.name) for record in self._records()
                for name in record.aliases + (record.name,)}

    # -- id-based --------------------------------------------------------------------------
    def _score(self, tokens, mems):
        check = self.checks
        tokens = check.after(check.lengths(tokens, "tokens") + check.ids(tokens, "tokens")
                             + [check.request_tokens(tf.size(tokens))], tokens)
        mems = check.mems(tokens, mems)
        log_probs, new_mems = graph_loop.model_step(self.model, tokens, mems, self.context)
        return {"log_probs": log_probs, "mems": tf.transpose(new_mems, [1, 0, 2, 3])}

    def _nll(self, tokens, labels, mems):
        check = self.checks
        checks = (check.lengths(tokens, "tokens") + check.ids(tokens, "tokens")
                  + [tf.debugging.assert_equal(
                        tf.shape(labels), tf.shape(tokens),
                        message="labels must have the shape of tokens [batch, len]"),
                     check.request_tokens(tf.size(tokens))]
                  + check.ids(labels, "labels"))
        tokens, labels = check.after(checks, tokens, labels)
        mems = check.mems(tokens, mems)
        out = self.model(tokens, mems=tf.unstack(mems, num=self.config.n_layer), labels=labels,
                         training=False, mem_len=self.context.mem_len,
                         clamp_len=self.context.clamp_len, same_length=self.context.same_length)
        return {"nll": out["nll"], "mems": tf.stack(out["mems"], axis=1)}

    def _init_mems(self, streams):
        c = self.config
        batch = self.checks.after([self.checks.batch(tf.size(streams), "init_mems")],
                                  tf.size(streams))
        return {"mems": tf.zeros([batch, c.n_layer, self.context.mem_len, c.d_model]),
                "mem_len": tf.fill([batch], self.context.mem_len)}

    def _generate_ids(self, prompt, num_tokens, temperature, top_k, top_p, seed):
        """prompt [B, P] with per-row settings [B] -> int32 [B, max_num_tokens]: row b's
        num_tokens[b] tokens, then -1 (the width is fixed, so that rows of other requests,
        batched with these, do not change it)."""
        longest = tf.reduce_max(tf.concat([num_tokens, [0]], 0))
        width = self.limits.max_num_tokens
        sampler = Sampler(temperature, top_k, top_p, seed)
        if self.settings.gen_jit_compile:
            generated = self._generate_compiled(prompt, longest, sampler)
        else:
            generated = graph_loop.generate_ids(self.model, prompt, longest, sampler,
                                                self.gen_context)
            generated = tf.pad(generated, [[0, 0], [0, width - longest]], constant_values=-1)
        keep = tf.range(width)[None, :] < num_tokens[:, None]
        return tf.ensure_shape(tf.where(keep, generated, -1), [None, width])

    def _generate_compiled(self, prompt, longest, sampler):
        """`fixed_loop.generate_fixed` in one XLA program: prompt [B, P] -> int32 [B,
        max_num_tokens], the prompt right-padded to gen_seg_len * 2**ceil(log2(ceil(P /
        gen_seg_len))) tokens (`buckets.prompt_bucket` with segments of gen_seg_len);
        `sampler`: the per-row `Sampler` (tensors [B])."""
        seg_len = self.gen_context.tgt_len
        length = tf.shape(prompt)[1]
        segments = (length + seg_len - 1) // seg_len
        bucket = seg_len * tf.while_loop(lambda n: n < segments, lambda n: n * 2,
                                         [tf.constant(1)])[0]
        padded = tf.pad(prompt, [[0, 0], [0, bucket - length]])
        width = self.limits.max_num_tokens

        @tf.function(jit_compile=True, autograph=False)
        def compiled(padded, length, longest, temperature, top_k, top_p, seed):
            return fixed_loop.generate_fixed(self.model, padded, length, longest, width,
                                             Sampler(temperature, top_k, top_p, seed),
                                             self.gen_context)

        return compiled(padded, length, longest, sampler.temperature, sampler.top_k,
                        sampler.top_p, sampler.seed)

    def _generate(self, prompt, num_tokens, temperature, top_k, top_p, seed):
        settings = (num_tokens, temperature, top_k, top_p, seed)
        longest = tf.reduce_max(tf.concat([num_tokens, [0]], 0))
        work = tf.cast(tf.shape(prompt)[0], tf.int64) * tf.cast(
            tf.shape(prompt)[1] + longest, tf.int64)
        check = self.checks
        checks = (check.lengths(prompt, "prompt") + check.ids(prompt, "prompt")
                  + check.sampling(tf.shape(prompt)[0], "prompt", settings)
                  + [check.request_tokens(work, "the tokens of the request (B x (P + the "
                                                "largest num_tokens))")])
        prompt = check.after(checks, prompt)
        return {"tokens": self._generate_ids(prompt, *settings), "lengths": num_tokens}

    # -- text ------------------------------------------------------------------------------
    def _encode_all(self, text, continuing):
        """text string [B] -> ragged int32 ids [B, (n)], every text tokenized."""
        return tf.map_fn(lambda one: self.text_codec.encode(one, continuing=continuing), text,
                         fn_output_signature=tf.RaggedTensorSpec([None], tf.int32,
                                                                 ragged_rank=0))

    def _generate_text(self, text, num_tokens, temperature, top_k, top_p, seed):
        settings = (num_tokens, temperature, top_k, top_p, seed)
        check = self.checks
        text = check.after(check.texts(text) + check.sampling(tf.size(text), "text", settings),
                           text)
        ids = self._encode_all(text, continuing=True)
        counts = tf.cast(ids.row_lengths(), tf.int32)
        work = tf.reduce_sum(tf.cast(counts + num_tokens, tf.int64))
        ids = ids.with_flat_values(check.after(check.prompt_tokens(counts, work),
                                               ids.flat_values))
        continuation = tf.map_fn(
            lambda row: self._continue_text(row[0], row[1:]), (ids,) + settings,
            fn_output_signature=tf.TensorSpec([], tf.string))
        return {"text": continuation, "prompt_tokens": counts}

    def _continue_text(self, ids, settings):
        """One prompt's ids int32 [n] and its settings (scalars) -> its continuation []."""
        codec = self.text_codec
        generated = self._generate_ids(ids[None], *(s[None] for s in settings))[0]
        generated = generated[:settings[0]]
        prefix = codec.decode(ids)
        full = codec.decode(tf.concat([ids, generated], 0))
        start = tf.strings.length(prefix)
        return tf.strings.substr(full, start, tf.strings.length(full) - start)

    def _score_text(self, text):
        check = self.checks
        text = check.after(check.texts(text), text)
        ids = self._encode_all(text, continuing=False)
        ids = ids.with_flat_values(check.after(check.scored_texts(ids), ids.flat_values))
        loss, count, total = tf.map_fn(
            self._score_one_text, ids,
            fn_output_signature=(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int64),
                                 tf.TensorSpec([], tf.float32)))
        return {"loss": loss, "tokens": count, "nll_sum": total}

    def _text_segments(self, ids):
        """ids int32 [n + 1] -> (inputs, labels) int32 [S, 1, tgt_len]: one stream cut into S
        segments, the last padded (labels -1), as tf_records' `pad` layout with one stream."""
        seg = self.context.tgt_len
        n = tf.size(ids) - 1
        steps = (n + seg - 1) // seg
        pad = steps * seg - n
        inputs = tf.reshape(tf.pad(ids[:n], [[0, pad]]), [steps, 1, seg])
        labels = tf.reshape(tf.pad(ids[1:n + 1], [[0, pad]], constant_values=-1),
                            [steps, 1, seg])
        return inputs, labels

    def _score_one_text(self, ids):
        """One text's ids int32 [n >= 2] -> (loss float32 [], tokens int64 [], nll_sum float32
        []): the segments run through `evaluation.segment_nll` from zero memory of mem_len."""
        c = self.config
        inputs, labels = self._text_segments(ids)

        def body(i, mems, total):
            nll, _, new_mems = evaluation.segment_nll(
                self.model, inputs[i], labels[i], tf.unstack(mems, num=c.n_layer),
                self.context)
            return i + 1, tf.stack(new_mems), total + tf.cast(nll, tf.float64)

        mems = tf.zeros([c.n_layer, 1, self.context.mem_len, c.d_model])
        _, _, total = tf.while_loop(lambda i, *_: i < tf.shape(inputs)[0], body,
                                    (tf.constant(0), mems, tf.constant(0.0, tf.float64)))
        count = tf.cast(tf.size(ids) - 1, tf.int64)
        loss = total / tf.cast(count, tf.float64)
        return tf.cast(loss, tf.float32), count, tf.cast(total, tf.float32)
