"""`ReleasedVocabulary`: the vocabulary shipped with released weights (the reference code's
pickle or a text file, one symbol per line in id order), written into the directory of the
imported model as `vocab.txt` and `corpus-info.json` (`tf_records.vocab.imported_files`).

`txl_tf.commands.import_weights.import_into_model_dir` takes one and calls `write` once the
weights are read and the model directory checked.

Example:
  >>> vocabulary = ReleasedVocabulary.read(vocab_pickle="tf_wt103/data/cache.pkl")
  >>> vocabulary.write("models/wt103", dataset=None, cutoffs=(20000, 40000, 200000),
  ...                  n_token=267735)
"""
from typing import Optional, Sequence

from tf_records.errors import VocabularyImportError
from tf_records.vocab import imported_files as export
from tf_records.vocab.reference_pickle import load_vocab_pickle
from untrusted_files import reading


class ReleasedVocabulary:
    """Symbols in id order and the corpus the release names (None when it names none).

    Args:
      symbols: the symbols (str; byte symbols as decimal values).
      dataset: the reference corpus the pickle records, or None.
    """

    def __init__(self, symbols: Sequence[str], dataset: Optional[str] = None):
        self.symbols, self.dataset = list(symbols), dataset

    @classmethod
    def read(cls, vocab_pickle: Optional[str] = None,
             vocab_file: Optional[str] = None) -> Optional["ReleasedVocabulary"]:
        """The vocabulary of a pickle (read without running code from it) or a text file;
        None when neither is given."""
        if vocab_pickle:
            symbols, info = load_vocab_pickle(vocab_pickle)
            return cls(symbols, info.get("dataset"))
        if vocab_file:
            data = reading.read_bytes(vocab_file, max_bytes=reading.MAX_VOCAB_BYTES,
                                      error=VocabularyImportError,
                                      name=f"--vocab_file={vocab_file}")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise VocabularyImportError(
                    f"--vocab_file={vocab_file} is not UTF-8 text (byte "
                    f"{data[error.start]:#04x} at offset {error.start}); give the vocabulary as "
                    "UTF-8, one symbol per line.") from None
            text = text.replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads it
            return cls(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"))
        return None

    def write(self, model_dir: str, dataset: Optional[str], cutoffs: Sequence[int],
              n_token: int) -> dict:
        """Writes vocab.txt and corpus-info.json for a model of `n_token` symbols and `cutoffs`;
        `dataset` (else the release's own) chooses the text rules. Returns the corpus info."""
        return export.write_vocabulary(model_dir, self.symbols, dataset or self.dataset,
                                       cutoffs, n_token)
