"""How raw text becomes symbols for a corpus: the rules stored with its vocabulary.

`TextRules` is written into `corpus-info.json` next to `vocab.txt`, so the vocabulary files
of a directory (`model_vocab`) carry the rules that made them; `tf_records/text/tokenize.py`
applies them. It lives beside the vocabulary so that `vocab/` needs nothing of `text/`
(`text/` imports `vocab/`, never the reverse).
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class TextRules:
    """How text becomes symbols.

    Attributes:
      level: "byte" (UTF-8 bytes), "char" (characters) or "word" (whitespace-split lines).
      lower_case: lower-case the text first (char and word levels).
      eos: the symbol appended to every line (word level), or None.
      double_eos: the symbol put before and after every line (lm1b's `<S>`), or None.
      drop_bytes: byte values removed from the stream (byte level; enwik8 drops newlines).
    """

    level: str
    lower_case: bool = False
    eos: str | None = None
    double_eos: str | None = None
    drop_bytes: tuple = ()

    def to_dict(self):
        d = dataclasses.asdict(self)
        d["drop_bytes"] = list(self.drop_bytes)
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["drop_bytes"] = tuple(d.get("drop_bytes", ()))
        return cls(**d)
