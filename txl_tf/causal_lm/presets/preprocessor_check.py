"""A preprocessor given for a directory that records its vocabulary's checksum must have that
vocabulary: the check is the preprocessor's own (`check_trained_with`, tf_records'
`model_vocab.check_model_checksum`, the one check of a model's vocabulary); this module only
turns its error into the preset loader's.

Example:
  >>> check_vocab_checksum("runs/default", CausalLMPreprocessor("data/builtin"))
"""
from txl_tf.causal_lm.errors import CausalLMInputError


def check_vocab_checksum(directory, preprocessor) -> None:
    """Raises `CausalLMInputError` when `directory`'s corpus-info.json records the checksum of
    another vocabulary than `preprocessor`'s (a preprocessor without `check_trained_with`, of
    another kind than tf_records', is not checked)."""
    check = getattr(preprocessor, "check_trained_with", None)
    if check is None:
        return
    try:
        check(directory)
    except ValueError as error:  # the vocabulary's errors are ValueErrors
        raise CausalLMInputError(str(error)) from None
