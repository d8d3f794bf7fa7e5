"""A synthetic long-range corpus whose tokens can only be predicted from far-back context.

Definition: the stream is a sequence of groups; each group draws a fresh chunk of `period`
symbols independently and uniformly from `num_symbols` symbols and emits it `repeats + 1`
times in a row. Within a group, every token of a repeat equals the token exactly `period`
positions earlier; the first copy is pure noise. Choose `period > tgt_len` so that only a
model carrying memory across segments can predict the repeats.

Best achievable loss (the entropy rate of the process, in nats per token):

```
best_loss = ln(num_symbols) / (repeats + 1)
```

Fresh tokens are independent of the past, so each costs at least ln(num_symbols); repeated tokens
are determined by the token `period` back (and the phase, which an unbounded context reveals).
A model that cannot see `period` tokens back can do no better than ln(num_symbols).

Word level, symbols `s0` ... `s{num_symbols-1}` (id i == `s<i>`), no end-of-line symbol.
Splits use independent seeds derived from `seed`; train has `train_tokens` tokens, valid and
test `eval_tokens` each.
"""
import math

import numpy as np

from tf_records.corpora.base import BuiltCorpus, Corpus
from tf_records.corpora.options import MAX_TOKENS, CorpusOptions, Option

# A vocabulary of s0 ... s{N-1}: 2**24 symbols is a 150 MB vocab.txt and, at d_model 512, a
# 32 GiB embedding and softmax.
MAX_SYMBOLS = 2**24
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary


def synthetic_stream(num_tokens, num_symbols, period, repeats, seed) -> np.ndarray:
    """int32 [num_tokens]: the process above with `np.random.default_rng(seed)`."""
    rng = np.random.default_rng(seed)
    group = period * (repeats + 1)
    num_groups = -(-num_tokens // group)
    chunks = rng.integers(0, num_symbols, size=(num_groups, 1, period), dtype=np.int32)
    return np.broadcast_to(chunks, (num_groups, repeats + 1, period)).reshape(-1)[:num_tokens].copy()


class Synthetic(Corpus):
    name = "synthetic"
    level = "word"
    cutoffs = ()
    OPTIONS = CorpusOptions(
        seed=Option(0, "seed of the process (each split's seed derives from it).",
                    flag="corpus_seed", range=(0, 2**63 - 1, "NumPy's SeedSequence")),
        num_symbols=Option(64, "alphabet size.",
                           range=(1, MAX_SYMBOLS, "every symbol is a line of vocab.txt and a "
                                                  "row of the model's embedding")),
        period=Option(256, "chunk length (make it > tgt_len).",
                      range=(1, MAX_TOKENS, "tokens")),
        repeats=Option(3, "repeats of each chunk.", range=(0, MAX_TOKENS, "repeats")),
        train_tokens=Option(1_000_000, "train tokens.",
                            range=(1, MAX_TOKENS, "int32 tokens held in memory")),
        eval_tokens=Option(100_000, "valid and test tokens.",
                           range=(1, MAX_TOKENS, "int32 tokens held in memory")))

    def __init__(self, **options):
        super().__init__(**options)  # the options' declared ranges

    @property
    def best_loss(self) -> float:
        """The entropy rate ln(num_symbols) / (repeats + 1), nats per token."""
        return math.log(int(self.options["num_symbols"])) / (int(self.options["repeats"]) + 1)

    def build(self, data_dir=None, raw_path=None, download=True, progress=True):
        o = {k: int(v) for k, v in self.options.items()}
        seeds = np.random.SeedSequence(o["seed"]).spawn(3)
        sizes = {"train": o["train_tokens"], "valid": o["eval_tokens"], "test": o["eval_tokens"]}
        streams = {s: synthetic_stream(sizes[s], o["num_symbols"], o["period"], o["repeats"], seq)
                   for s, seq in zip(("train", "valid", "test"), seeds)}
        vocab = Vocabulary([f"s{i}" for i in range(o["num_symbols"])], "word")
        return BuiltCorpus(vocab, TextRules("word"), streams,
                           {"best_loss_nats": self.best_loss,
                            "unigram_loss_nats": math.log(o["num_symbols"])})
