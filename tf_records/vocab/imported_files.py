"""Write an imported model's vocabulary as txl-tf text files: `vocab.txt` and `corpus-info.json`.

`vocab.txt` is the `tf_records.Vocabulary` format (one symbol per line in id order; byte symbols
as decimal values, as the reference enwik8 vocabulary already stores them). `corpus-info.json`
holds the level, the text rules of the reference corpus (so that `runners/evaluate.py
--text_file` and `runners/generate.py` tokenize raw text as the released model expects), the
vocabulary size and checksum, and the cutoffs.
"""
import os

from tf_records import atomic
from tf_records.errors import VocabularyImportError
from tf_records.data_dir_layout import CORPUS_INFO_FILE, VOCAB_FILE
from tf_records.vocab.text_rules import TextRules
from tf_records.vocab.vocabulary import Vocabulary

# The reference corpora's text rules (reference brief section 2.2).
DATASET_RULES = {
    "enwik8": TextRules("byte", drop_bytes=(10,)),  # newline bytes vanish from the stream
    "text8": TextRules("char"),
    "wt103": TextRules("word", eos="<eos>"),
    "wt2": TextRules("word", eos="<eos>"),
    "ptb": TextRules("word", lower_case=True, eos="<eos>"),
    "lm1b": TextRules("word", double_eos="<S>"),
}
UNK_SYMBOLS = {"lm1b": "<UNK>"}


def infer_level(symbols) -> str:
    """`byte` when every symbol is a decimal byte value, `char` when every one is one character,
    else `word`."""
    if all(s.isdigit() and 0 <= int(s) <= 255 for s in symbols):
        return "byte"
    if all(len(s) == 1 for s in symbols):
        return "char"
    return "word"


def write_vocabulary(model_dir, symbols, dataset=None, cutoffs=(), n_token=None):
    """Writes an imported model's `vocab.txt` and `corpus-info.json` into `model_dir`.

    Args:
      model_dir: the model directory (created when missing).
      symbols: the symbols in id order (str; byte symbols as decimal values).
      dataset: the reference corpus (its text rules and unknown symbol), or None: the level is
        inferred from the symbols.
      cutoffs: the model's adaptive-softmax cutoffs.
      n_token: the model's vocabulary size V; None: not checked.

    Returns:
      The corpus-info dict written.

    Raises:
      VocabularyImportError: the vocabulary has another size than the model's.
      StorageError: `model_dir` is read-only or its disk is full.
    """
    symbols = list(symbols)
    if n_token is not None and len(symbols) != n_token:
        raise VocabularyImportError(
            f"the vocabulary has {len(symbols)} symbols but the model has n_token={n_token}; "
            "it belongs to another model (use the cache.pkl shipped with these weights).")
    rules = DATASET_RULES.get(dataset) or TextRules(infer_level(symbols))
    if rules.level == "byte":
        table = [int(s) for s in symbols]
    else:
        table = symbols
    unk = UNK_SYMBOLS.get(dataset)
    if unk is not None and unk not in symbols:
        unk = None
    vocab = Vocabulary(table, rules.level, unk_symbol=unk,
                       unk_policy="unk" if unk is not None else "error")
    atomic.ensure_dir(model_dir, "model_dir")
    vocab.save(os.path.join(model_dir, VOCAB_FILE))
    info = {"dataset": dataset or "imported", "level": rules.level, "rules": rules.to_dict(),
            "vocab_size": len(vocab),
            "vocab_checksum": vocab.checksum(), "cutoffs": [int(c) for c in cutoffs]}
    if unk is not None:
        info["unk_symbol"] = unk
    atomic.write_json(os.path.join(model_dir, CORPUS_INFO_FILE), info)
    return info
