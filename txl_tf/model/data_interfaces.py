"""The seam between the model and the data: what txl_tf needs of a vocabulary and of text.

`txl_tf` never imports the data package (CONTRIBUTING, "Dependency directions"). A command that
turns text into ids or ids into text receives objects with the members below, passed in by its
runner (`tf_records.model_data.ModelData` and the `ModelText` it returns are this project's);
training receives a `txl_tf.training.data_source.DataSource` and a
`txl_tf.model.config_template.ConfigTemplate`. Nothing here imports TensorFlow or the data package.

  ModelText    a model's vocabulary and text rules: ids of a prompt or a document, the
               continuation as text, the in-graph codec of serving;
  TextData     where a command gets a `ModelText` and its evaluation batches;
  EvalStreams  the batches an evaluation scores, with their count and unigram baseline.

Example (the command half of generate, `txl_tf/commands/generate.py`):
  >>> text = data.model_text(model_dir, config.n_token)     # data: a TextData
  >>> ids = text.encode("The meaning of life is")           # int32 [T]
  >>> streamer = text.streamer(ids)
  >>> streamer.push(next_id)                                 # the text it adds
"""
from typing import Any, List, NamedTuple, Optional, Protocol


class TextStreamer(Protocol):
    """Generated ids -> the text to print, piece by piece (UTF-8 safe for bytes).

    Attributes:
      printed: the text returned so far.
    """
    printed: str

    def push(self, token: int) -> str:
        """Adds one generated id; returns the text it adds (may be empty)."""

    def finish(self) -> str:
        """The text held back at the end (an incomplete UTF-8 sequence, as replacements)."""


class ModelText(Protocol):
    """A model's vocabulary and text rules.

    Attributes:
      level: "byte", "char" or "word" (the loss's unit: `txl_tf/loss/loss_report.py`).
      vocab_size: V, the model's n_token.
      vocab_path: the vocabulary file (one symbol per line, line i is id i): an export ships it.
      unk_symbol: the symbol unknown ones are read as (None: the vocabulary has none).
    """
    level: str
    vocab_size: int
    vocab_path: str
    unk_symbol: Optional[str]

    def encode(self, text: str) -> Any:
        """int32 [T] ids of a prompt (its last line continues: no end-of-line symbol added)."""

    def encode_document(self, data: bytes) -> Any:
        """int32 [T] ids of a whole document (raw bytes), as the corpus' records are made."""

    def unknown_symbols(self, text: str) -> List[str]:
        """The distinct symbols of `text` the vocabulary lacks, in order; [] for bytes."""

    def streamer(self, prompt_ids) -> TextStreamer:
        """A `TextStreamer` for the continuation of `prompt_ids` (int [T])."""

    def graph_codec(self) -> Any:
        """The text rules as TensorFlow graph ops, for the SavedModel's text signatures:
        `encode(text: tf.string [], continuing=False) -> int32 [T]`,
        `decode(ids: int32 [T]) -> tf.string []`, attributes `vocab_path`, `level`
        (`txl_tf.serving.module.ServingModule`'s `text_codec`)."""


class EvalStreams(NamedTuple):
    """What an evaluation scores.

    Attributes:
      batches: a `tf.data.Dataset` of {"inputs", "labels"} int32 [B, Q], B streams read in
        segments of Q = tgt_len (the layout of `txl_tf.inference.evaluation.Evaluator`).
      num_steps: segments per stream.
      name: the split's name, or "text" for a document.
      unigram_entropy: nats per token of the scored tokens' unigram distribution (the verdict's
        baseline), or None.
    """
    batches: Any
    num_steps: int
    name: str
    unigram_entropy: Optional[float]


class TextData(Protocol):
    """Where the commands get a model's text rules and the batches they score.

    Every method raises a `ValueError` whose message names the problem and its fix (a missing
    or foreign vocabulary, records of another vocabulary, a text too short).
    """

    def has_vocabulary(self, model_dir: str) -> bool:
        """Whether `model_dir` holds a vocabulary file."""

    def model_text(self, model_dir: str, vocab_size: Optional[int] = None,
                   vocab_file: Optional[str] = None) -> ModelText:
        """The `ModelText` of `model_dir` (or of `vocab_file` and the corpus description
        beside it), checked against the model's vocabulary size when given."""

    def document_streams(self, tokens, batch_size: int, tgt_len: int,
                         last_segment: str = "drop") -> tuple:
        """(batches, num_steps) of int [T] `tokens` cut into `batch_size` streams read in
        segments of `tgt_len` ("drop": whole segments only; "pad": the last one padded, its
        padding unscored); a `ValueError` when the tokens are too few."""

    def unigram_entropy(self, tokens) -> Optional[float]:
        """Nats per token of the unigram distribution of int [T] `tokens` (None: empty)."""

    def split_streams(self, data_dir: str, split: str, tgt_len: int, batch_size: int,
                      last_segment: str, vocab_size: int, model_dir: str,
                      progress: bool = True) -> tuple:
        """`EvalStreams` fields (batches, num_steps, split, unigram entropy) of `split` in the
        prepared `data_dir` for this layout (its records made from the token cache when
        missing), refused when they were made with another vocabulary than `model_dir`'s."""
