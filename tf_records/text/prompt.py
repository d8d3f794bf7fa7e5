"""A prompt's text for generation: its ids, its unknown symbols, the continuation as text.

`PromptText(model_vocab)` applies a model's vocabulary and text rules (`tf_records.text.tokenize`)
to a prompt and turns generated ids back into the text to print, piece by piece.

Example:
  >>> text = PromptText(load_model_vocab(model_dir, n_token))
  >>> ids = text.encode("The meaning of life is")
  >>> streamer = text.streamer(ids)
  >>> piece = streamer.push(next_id)          # the new text, UTF-8 safe for bytes
"""
import codecs

from tf_records.text.tokenize import decode_ids, encode_text, word_symbols


class TextStreamer:
    """Turns the ids generated so far into the new text to print (UTF-8 safe for bytes).

    Args:
      model_vocab: the `ModelVocab`.
      prompt: the prompt ids (the text they decode to is not printed again).
    """

    def __init__(self, model_vocab, prompt):
        self.mv, self.prompt = model_vocab, [int(i) for i in prompt]
        self.ids = []
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.printed = ""
        self.base = (decode_ids(self.prompt, model_vocab.rules, model_vocab.vocab)
                     if model_vocab.level != "byte" else "")

    def push(self, token) -> str:
        """Adds one generated id; returns the text it adds."""
        self.ids.append(int(token))
        if self.mv.level == "byte":
            piece = self.utf8.decode(self.mv.vocab.decode([int(token)]))
        else:
            full = decode_ids(self.prompt + self.ids, self.mv.rules, self.mv.vocab)
            text = full[len(self.base):] if full.startswith(self.base) else full
            piece = text[len(self.printed):] if text.startswith(self.printed) else text
        self.printed += piece
        return piece

    def finish(self) -> str:
        """The text held back at the end (an incomplete UTF-8 sequence), as replacements."""
        if self.mv.level == "byte":
            piece = self.utf8.decode(b"", final=True)
            self.printed += piece
            return piece
        return ""


class PromptText:
    """A model's text rules for prompts and continuations.

    Args:
      model_vocab: a `tf_records.vocab.model_vocab.ModelVocab`.

    Attributes:
      level: "byte", "char" or "word".
      unk_symbol: the vocabulary's unknown symbol (None when it has none).
    """

    def __init__(self, model_vocab):
        self.mv = model_vocab
        self.level = model_vocab.level
        self.unk_symbol = model_vocab.vocab.unk_symbol

    def encode(self, text):
        """Prompt text -> int32 ids with the model's rules. For word-level corpora with an
        end-of-line symbol, the symbol of a last line that does not end with a newline is
        dropped (the prompt continues that line)."""
        mv = self.mv
        ids = encode_text(text, mv.rules, mv.vocab)
        marker = mv.rules.double_eos or mv.rules.eos
        if (mv.level == "word" and marker and len(ids) and not text.endswith(("\n", "\r"))
                and ids[-1] == mv.vocab.id_of(marker)):
            ids = ids[:-1]
        return ids

    def unknown_symbols(self, text):
        """The distinct symbols of the prompt that the model's vocabulary lacks (they map to
        its unk symbol), in order of appearance; [] for byte-level models."""
        mv = self.mv
        if mv.level == "byte":
            return []
        if mv.level == "word":
            symbols = [w for line in text.splitlines() for w in word_symbols(line, mv.rules)]
        else:
            symbols = list(text.lower() if mv.rules.lower_case else text)
        return list(dict.fromkeys(s for s in symbols if s not in mv.vocab and s not in "\r\n"))

    def streamer(self, prompt_ids) -> TextStreamer:
        """A `TextStreamer` for the continuation of `prompt_ids`."""
        return TextStreamer(self.mv, prompt_ids)
