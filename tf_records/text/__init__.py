"""Text and token ids: the text rules of a corpus, in Python and as TensorFlow ops, applied to
the text of a prepared data directory and to a generation prompt."""
