"""The preprocessor of a causal language model: strings to ids and back, saved the Keras way.

`CausalLMPreprocessor` holds a model's vocabulary and text rules (every level: byte, char,
word with `<unk>`/`<eos>`) and applies them as generation does (`model_text.ModelText`): a
prompt becomes ids, generated ids become the text of the continuation. It is a Keras-serializable
layer without weights: `keras.saving.serialize_keras_object(preprocessor)` is its
`preprocessor.json` (naming this module and class, one of the fixed few a preset may name:
`txl_tf/causal_lm/presets/preprocessor_classes.py`),
and its vocabulary is saved beside it as `vocab.txt` and `corpus-info.json` by `save_assets`
(the same pair as a model directory's, read back by `load_assets`). Keras' own `.keras` format
calls the same two hooks.

Example:
  >>> pre = CausalLMPreprocessor("runs/default")        # a model, data or preset directory
  >>> ids = pre.tokenize("The meaning of life is")      # int32 [P]
  >>> pre.continuation(ids, generated)                  # the text generate.py prints
  >>> config = keras.saving.serialize_keras_object(pre) # preprocessor.json
  >>> pre.save_assets(preset_dir)                       # vocab.txt + corpus-info.json
"""
import keras
import numpy as np

from tf_records.vocab import model_vocab
from tf_records.errors import VocabularyError
from tf_records.model_data import ModelText
from tf_records.text.tokenize import decode_ids

# corpus-info.json fields that `write_model_vocab` derives from the vocabulary itself (the text
# rules of an imported model's "rules" are written as "text_rules"), and its own arguments
_DERIVED_INFO = ("level", "text_rules", "rules", "vocab_size", "vocab_checksum", "directory",
                 "vocab")


class PreprocessorError(VocabularyError):
    """A preprocessor without a vocabulary, or given something that is not text or ids."""


@keras.saving.register_keras_serializable(package="tf_records")
class CausalLMPreprocessor(keras.layers.Layer):
    """A model's vocabulary and text rules as a Keras-serializable layer (no weights).

    Args:
      vocabulary: a directory holding `vocab.txt` and `corpus-info.json` (a model directory,
        a prepared data directory or a preset), a `model_vocab.ModelVocab`, or None to be
        filled by `load_assets` (as deserialization does).
      **kwargs: `keras.layers.Layer` arguments (name, ...).

    Attributes:
      level: "byte", "char" or "word".
      vocabulary_size: V, the number of ids.
      vocabulary_file: the vocab.txt the vocabulary was read from.
      corpus_info: the corpus-info.json dict (dataset, text rules, special symbols).
    """

    def __init__(self, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self.built = True  # nothing to build: no weights
        self._text = None
        if isinstance(vocabulary, model_vocab.ModelVocab):
            self._text = ModelText(vocabulary)
        elif vocabulary is not None:
            self.load_assets(vocabulary)

    # -- the vocabulary ---------------------------------------------------------------------
    @property
    def model_vocab(self) -> model_vocab.ModelVocab:
        if self._text is None:
            raise PreprocessorError("the preprocessor has no vocabulary yet; give it a "
                                    "directory with vocab.txt and corpus-info.json "
                                    "(CausalLMPreprocessor(model_dir) or load_assets(dir)).")
        return self._text.mv

    @property
    def level(self) -> str:
        return self.model_vocab.level

    @property
    def vocabulary_size(self) -> int:
        return len(self.model_vocab.vocab)

    @property
    def vocabulary_file(self) -> str:
        return self.model_vocab.vocab_path

    @property
    def corpus_info(self) -> dict:
        return dict(self.model_vocab.corpus_info)

    def save_assets(self, dir_path):
        """Writes `vocab.txt` and `corpus-info.json` into `dir_path`, atomically."""
        mv = self.model_vocab
        extra = {k: v for k, v in mv.corpus_info.items() if k not in _DERIVED_INFO}
        extra.update(specials=list(mv.vocab.specials), unk_symbol=mv.vocab.unk_symbol,
                     unk_policy=mv.vocab.unk_policy)
        model_vocab.write_model_vocab(dir_path, mv.vocab, mv.rules, **extra)

    def load_assets(self, dir_path):
        """Reads `vocab.txt` and `corpus-info.json` of `dir_path` (ModelVocabError if not)."""
        self._text = ModelText(model_vocab.load_model_vocab(str(dir_path)))

    def check_trained_with(self, directory) -> None:
        """Raises `ModelVocabError` when `directory` (a model directory or preset) records, in
        its corpus-info.json, the checksum of another vocabulary than this preprocessor's: one
        of the same size from another corpus would read every id as another symbol."""
        model_vocab.check_model_checksum(str(directory), self.model_vocab.vocab.checksum(),
                                         "the preprocessor's vocabulary")

    def get_config(self) -> dict:
        """The layer's configuration; the vocabulary is an asset (`save_assets`), not config."""
        return super().get_config()

    # -- text <-> ids -------------------------------------------------------------------------
    def tokenize(self, text) -> np.ndarray:
        """A prompt's ids with the model's text rules, as generate.py reads it.

        Args:
          text: a str (a last line without a line end continues that line at word level).

        Returns:
          int32 [P] ids; symbols the vocabulary lacks become its unknown symbol (or raise
          VocabularyError when it has none).
        """
        if not isinstance(text, str):
            raise PreprocessorError(f"tokenize takes a str, got {type(text).__name__}; "
                                    "give the prompt as text.")
        return np.asarray(self._text_rules().encode(text), np.int32)

    def unknown_symbols(self, text: str) -> list:
        """The distinct symbols of `text` read as the unknown symbol, in order ([] for bytes)."""
        return self._text_rules().unknown_symbols(text)

    def detokenize(self, ids) -> str:
        """The text of int ids [n] (bytes decoded as UTF-8, invalid ones replaced)."""
        mv = self.model_vocab
        return decode_ids([int(i) for i in np.asarray(ids).reshape([-1])], mv.rules, mv.vocab)

    def continuation(self, prompt_ids, generated_ids) -> str:
        """The text that `generated_ids` add after `prompt_ids`: what generate.py prints."""
        streamer = self._text_rules().streamer(np.asarray(prompt_ids).reshape([-1]))
        for token in np.asarray(generated_ids).reshape([-1]):
            streamer.push(int(token))
        return streamer.printed + streamer.finish()

    def graph_text(self):
        """The in-graph text rules of the vocabulary (`text.graph.GraphText`) for an export's
        text signatures (`ModelText.graph_codec`: loads the tensorflow_text ops)."""
        return self._text_rules().graph_codec()

    def _text_rules(self) -> ModelText:
        self.model_vocab  # raises when there is no vocabulary
        return self._text
