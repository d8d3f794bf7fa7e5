"""Corpus registry: `CORPORA` maps a dataset name to its `Corpus` class."""
from tf_records.corpora.base import BuiltCorpus, Corpus
from tf_records.corpora.builtin import Builtin
from tf_records.corpora.enwik8 import Enwik8
from tf_records.corpora.lm1b import OneBillionWord
from tf_records.corpora.ptb import PennTreebank
from tf_records.corpora.synthetic import Synthetic
from tf_records.corpora.text import TextFiles
from tf_records.corpora.text8 import Text8
from tf_records.corpora.wikitext import WikiText2, WikiText103
from tf_records.errors import DataError

CORPORA = {c.name: c for c in (Enwik8, Text8, WikiText103, WikiText2, PennTreebank,
                               OneBillionWord, TextFiles, Builtin, Synthetic)}


def get_corpus(name, **options) -> Corpus:
    """A corpus instance by dataset name (``enwik8, text8, wt103, wt2, ptb, lm1b, text, builtin,
    synthetic``) with its options; unknown names or options raise DataError."""
    if name not in CORPORA:
        raise DataError(f"unknown dataset {name!r}; choose one of {sorted(CORPORA)}.")
    return CORPORA[name](**options)


__all__ = ["CORPORA", "BuiltCorpus", "Corpus", "get_corpus"]
