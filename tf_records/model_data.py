"""The data side of the seam between model and data: a model's text rules and evaluation data.

`ModelData` and the `ModelText` it returns have the members `txl_tf/model/data_interfaces.py`
describes (`TextData`, `ModelText`); the runners pass a `ModelData()` to the commands of `txl_tf`,
which never import this package. Importing this module does not import TensorFlow (the in-graph
codec and the datasets import it when they are made).

Example:
  >>> data = ModelData()
  >>> text = data.model_text("runs/default", vocab_size=204)
  >>> ids = text.encode("def main():")
  >>> batches, num_steps = data.document_streams(ids, batch_size=1, tgt_len=8,
  ...                                            last_segment="pad")
"""
import os
from typing import Optional

from tf_records import data_dir_layout
from tf_records.prepared_data import PreparedData
from tf_records.token_statistics import unigram_entropy
from tf_records.records.reader import dataset_from_tokens
from tf_records.vocab import model_vocab
from tf_records.text.prompt import PromptText, TextStreamer
from tf_records.text.tokenize import encode_text


class ModelText:
    """A model's vocabulary and text rules (`txl_tf.model.data_interfaces.ModelText`).

    Args:
      mv: the `tf_records.vocab.model_vocab.ModelVocab` of the model.

    Attributes:
      level, vocab_size, vocab_path, unk_symbol: as `txl_tf.model.data_interfaces.ModelText`.
    """

    def __init__(self, mv: model_vocab.ModelVocab):
        self.mv = mv
        self.prompts = PromptText(mv)
        self.level = mv.level
        self.vocab_size = len(mv.vocab)
        self.vocab_path = mv.vocab_path
        self.unk_symbol = mv.vocab.unk_symbol

    def encode(self, text: str):
        """int32 [T] ids of a prompt (`PromptText.encode`)."""
        return self.prompts.encode(text)

    def encode_document(self, data: bytes):
        """int32 [T] ids of a whole document, as the corpus' records are made."""
        return encode_text(data, self.mv.rules, self.mv.vocab)

    def unknown_symbols(self, text: str) -> list:
        return self.prompts.unknown_symbols(text)

    def streamer(self, prompt_ids) -> TextStreamer:
        return self.prompts.streamer(prompt_ids)

    def graph_codec(self):
        """A `tf_records.text.graph.GraphText` of this vocabulary."""
        # TensorFlow and TF Text load only for an export with text signatures, not with this
        # module (runners import it before their flags are checked).
        import tensorflow_text  # noqa: F401  (registers the ops the text signatures use)
        from tf_records.text.graph import GraphText
        return GraphText(self.mv)


class ModelData:
    """A model's vocabulary and the batches a command scores
    (`txl_tf.model.data_interfaces.TextData`).

    Every error is a `ValueError` of this package (`ModelVocabError`, `LayoutError`, the
    records' errors) whose message names the fix.
    """

    def has_vocabulary(self, model_dir: str) -> bool:
        return os.path.isfile(os.path.join(model_dir, data_dir_layout.VOCAB_FILE))

    def model_text(self, model_dir: str, vocab_size: Optional[int] = None,
                   vocab_file: Optional[str] = None) -> ModelText:
        """The `ModelText` of `model_dir`'s vocab.txt and corpus-info.json (or `vocab_file`'s);
        `ModelVocabError` when missing, malformed or not of `vocab_size` symbols."""
        return ModelText(model_vocab.load_model_vocab(model_dir, vocab_size, vocab_file))

    def document_streams(self, tokens, batch_size: int, tgt_len: int,
                         last_segment: str = "drop") -> tuple:
        """(dataset, num_steps) of `tokens` in `batch_size` streams (`dataset_from_tokens`);
        `LayoutError` when they are too few."""
        data = dataset_from_tokens(tokens, batch_size, tgt_len, last_segment=last_segment)
        return data, data.num_steps

    def unigram_entropy(self, tokens) -> Optional[float]:
        return unigram_entropy(tokens)

    def split_streams(self, data_dir: str, split: str, tgt_len: int, batch_size: int,
                      last_segment: str, vocab_size: int, model_dir: str,
                      progress: bool = True) -> tuple:
        """(dataset, num_steps, split, unigram entropy) of `split` in `data_dir` (the records
        made from the token cache when missing, checked by checksum); `ModelVocabError` when
        they were made with another vocabulary than `model_dir`'s vocab.txt."""
        data = PreparedData(data_dir)
        layout = data.layout(tgt_len, batch_size, last_segment=last_segment)
        input_fn = data.input_fn(split, layout, verify="checksum", vocab_size=vocab_size,
                                 make_from_cache=True, progress=progress)
        made_with = input_fn.metadata.get("vocab_checksum")
        vocab_path = os.path.join(model_dir, data_dir_layout.VOCAB_FILE)
        if os.path.isfile(vocab_path):
            ours = model_vocab.load_model_vocab(model_dir, vocab_size).vocab.checksum()
            if made_with not in (None, ours):
                raise model_vocab.ModelVocabError(
                    f"vocabulary mismatch: the {split} records in {data_dir} were made with "
                    f"vocabulary {made_with}, the model's {vocab_path} is {ours}. Evaluate on "
                    "data prepared with the model's corpus.")
        return input_fn(), input_fn.metadata["num_steps"], split, data.unigram_entropy(split)
