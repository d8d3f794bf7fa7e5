"""`ConfigTemplate`: a model configuration whose vocabulary is the data's.

A training run knows every hyperparameter before it knows its data, but the vocabulary size V
(`n_token`) and the adaptive-softmax cutoffs come from the data (`DataSource.vocab_size`,
`DataSource.cutoffs`). The template holds the rest as a `TransformerXLConfig` with a
placeholder vocabulary, so that its sizes (tgt_len, mem_len, the memory check) are known and
checked before the data is read, and `for_data` fills in the vocabulary.

Example:
  >>> template = ConfigTemplate.of(n_layer=2, d_model=64, n_head=2, d_head=32, d_inner=128,
  ...                              tgt_len=32, mem_len=32)
  >>> template.config.tgt_len
  32
  >>> template.for_data(256).n_token
  256
  >>> template.replace(mem_len=0).for_data(21_876, (2_000,)).cutoffs
  (2000,)
"""
import dataclasses
from typing import Optional, Sequence

from txl_tf.model.config import TransformerXLConfig, auto_cutoffs

# The vocabulary size of the template's own config: larger than any real one, so that explicit
# cutoffs are valid before the data's V is known. Sizes and the memory estimate do not read it.
PLACEHOLDER_VOCAB = 1 << 30


@dataclasses.dataclass(frozen=True)
class ConfigTemplate:
    """A `TransformerXLConfig` without its vocabulary.

    Attributes:
      config: every field but the vocabulary; `n_token` is `PLACEHOLDER_VOCAB`, `cutoffs` the
        explicit ones (used only when `data_cutoffs` is False).
      data_cutoffs: True: the cutoffs are the data's below V, or when the data has none
        `auto_cutoffs(V)` (`--cutoffs=auto`); False: `config.cutoffs` as given (`()`: a plain
        softmax).
    """
    config: TransformerXLConfig
    data_cutoffs: bool = True

    @classmethod
    def of(cls, cutoffs: Optional[Sequence[int]] = None, **fields) -> "ConfigTemplate":
        """The template of `fields` (any `TransformerXLConfig` field but n_token); `cutoffs`
        None: the data's; a sequence: exactly these. Raises `ConfigError` for invalid
        fields."""
        config = TransformerXLConfig(n_token=PLACEHOLDER_VOCAB, cutoffs=tuple(cutoffs or ()),
                                     **fields)
        return cls(config, data_cutoffs=cutoffs is None)

    @property
    def tgt_len(self) -> int:
        return self.config.tgt_len

    def replace(self, **changes) -> "ConfigTemplate":
        """The template with `changes` to its config (not the vocabulary)."""
        return dataclasses.replace(self, config=self.config.replace(**changes))

    def for_data(self, vocab_size: int, corpus_cutoffs: Sequence[int] = ()
                 ) -> TransformerXLConfig:
        """The configuration of a model of the data's vocabulary.

        Args:
          vocab_size: V, the data's vocabulary size.
          corpus_cutoffs: the data's cutoffs (may be empty).

        Returns:
          The `TransformerXLConfig` with n_token V and its cutoffs.

        Raises:
          ConfigError: cutoffs that do not fit V, or another field invalid for V.
        """
        cutoffs = self.config.cutoffs
        if self.data_cutoffs:
            cutoffs = tuple(int(c) for c in corpus_cutoffs) or auto_cutoffs(vocab_size)
            cutoffs = tuple(c for c in cutoffs if c < vocab_size)
        return self.config.replace(n_token=vocab_size, cutoffs=cutoffs)
