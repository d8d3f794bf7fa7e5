"""Vocabularies: the `Vocabulary` and its file, the vocabulary files of a data or model
directory, the word vocabulary chosen from a corpus, and a released model's vocabulary."""
