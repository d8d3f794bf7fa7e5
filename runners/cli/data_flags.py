"""The corpus-option flags shared by `prepare_data.py` and `train.py` (`--level`, `--lower_case`,
`--unk_policy`, `--verify_checksum`, `--url`, ...).

Every flag defaults to None: only the options given are passed on, so a run on a prepared
`--data_dir` reuses the options its `corpus-info.json` records and a given option changes one.
"""
from absl import flags

# name -> (kind, help); kinds: bool, int, float, str, or a list of enum values.
CORPUS_FLAGS = {
    "full_bytes": ("bool", "enwik8/text: 256-byte vocabulary, keep newlines."),
    "verify_checksum": ("bool", "enwik8/text8: check the canonical size/md5 (--noverify_checksum "
                                "for a stand-in archive)."),
    "eval_bytes": ("int", "enwik8: bytes in valid and in test (5,000,000)."),
    "eval_chars": ("int", "text8: characters in valid and in test (5,000,000)."),
    "url": ("str", "Download URL of the corpus (default: the reference's URL)."),
    "vocab_url": ("str", "lm1b: URL of 1b_word_vocab.txt."),
    "vocab_path": ("str", "Use this vocabulary file (lm1b: 1b_word_vocab.txt)."),
    "backend": (["python", "tf_text"], "Word tokenizer backend (same ids)."),
    "num_shuffles": ("int", "lm1b: shuffled copies of each training shard."),
    "max_train_shards": ("int", "lm1b: read only the first N training shards."),
    "level": (["byte", "char", "word"], "text: tokenization level."),
    "train_path": ("str", "text: training file (default --raw_path)."),
    "valid_path": ("str", "text: validation file."),
    "test_path": ("str", "text: test file."),
    "eval_fraction": ("float", "text/builtin: fraction for valid and for test."),
    "lower_case": ("bool", "text: lower-case the text."),
    "add_eos": ("bool", "text (word): <eos> at every line end."),
    "vocab_from": (["train", "all"], "text: splits counted for the vocabulary."),
    "min_freq": ("int", "text: minimum count of a symbol (word level, when neither this nor "
                        "--max_size is given: chosen from the corpus; 1 keeps every word)."),
    "max_size": ("int", "text: maximum vocabulary size (with specials)."),
    "unk_policy": (["error", "unk"], "text: symbols of valid/test (or pruned ones) missing from "
                                     "the vocabulary map to <unk> (default) or are an error."),
    "max_bytes": ("int", "builtin: keep only the first N bytes (0 = all)."),
    "num_symbols": ("int", "synthetic: alphabet size."),
    "period": ("int", "synthetic: chunk length (make it > tgt_len)."),
    "repeats": ("int", "synthetic: repeats of each chunk."),
    "train_tokens": ("int", "synthetic: train tokens."),
    "eval_tokens": ("int", "synthetic: valid and test tokens."),
}


def define_corpus_flags(flag_values: flags.FlagValues = flags.FLAGS) -> list:
    """Defines every flag of `CORPUS_FLAGS` in `flag_values`, default None; returns their
    names."""
    define = {"bool": flags.DEFINE_bool, "int": flags.DEFINE_integer,
              "float": flags.DEFINE_float, "str": flags.DEFINE_string}
    for name, (kind, help_text) in CORPUS_FLAGS.items():
        if isinstance(kind, list):
            flags.DEFINE_enum(name, None, kind, help_text, flag_values=flag_values)
        else:
            define[kind](name, None, help_text, flag_values=flag_values)
    return list(CORPUS_FLAGS)


def corpus_options(flag_values: flags.FlagValues = flags.FLAGS) -> dict:
    """{name: value} of the corpus flags that were given (not None)."""
    return {name: flag_values[name].value for name in CORPUS_FLAGS
            if flag_values[name].value is not None}
