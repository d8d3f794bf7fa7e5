"""The corpus-option flags shared by `prepare_data.py` and `train.py` (`--level`, `--lower_case`,
`--unk_policy`, `--verify_checksum`, `--url`, ...), generated from the corpora's `OPTIONS`.

One flag per option name over all corpora (`Option.flag` when the option's name is taken, as
`--corpus_seed` for the corpora's `seed`); its type and choices are the option's, its help the
option's help prefixed by the corpora that take it ("enwik8/text: 256-byte vocabulary, keep
newlines."). Every flag defaults to None: only the options given are passed on, so a run on a
prepared `--data_dir` reuses the options its `corpus-info.json` records and a given option
changes one.
"""
from typing import Dict, List, Tuple

from absl import flags

from runners.cli import flag_ranges
from tf_records.corpora import CORPORA
from tf_records.corpora.options import Option
from txl_tf.runtime.ranges import Range

_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
           str: flags.DEFINE_string}


def corpus_flag_specs() -> Dict[str, Tuple[str, List[Tuple[str, Option]]]]:
    """{flag name: (option name, [(corpus name, its `Option`), ...])} over every corpus.

    Raises:
      ValueError: two corpora give one flag different types or choices (a programming error).
    """
    specs = {}
    for corpus_name, corpus in CORPORA.items():
        for name, option in corpus.OPTIONS.specs.items():
            flag = option.flag_name(name)
            option_name, takers = specs.setdefault(flag, (name, []))
            first = takers[0][1] if takers else None
            if first and (option_name != name or option.flag_kind != first.flag_kind
                          or option.choices != first.choices
                          or (option.range or ())[:2] != (first.range or ())[:2]):
                raise ValueError(f"corpus option --{flag}: {corpus_name}'s type, choices, "
                                 f"range or name differ from {takers[0][0]}'s.")
            takers.append((corpus_name, option))
    return specs


def _help(takers: List[Tuple[str, Option]]) -> str:
    """'enwik8/text: help.' per distinct help text, one after the other."""
    by_help = {}
    for corpus_name, option in takers:
        by_help.setdefault(option.help, []).append(corpus_name)
    return " ".join(f"{'/'.join(names)}: {text}" for text, names in by_help.items())


def define_corpus_flags(flag_values: flags.FlagValues = flags.FLAGS) -> list:
    """Defines one flag per corpus option in `flag_values`, default None; returns their names."""
    specs = corpus_flag_specs()
    for flag, (_, takers) in specs.items():
        option, help_text = takers[0][1], _help(takers)
        if option.choices:
            flags.DEFINE_enum(flag, None, list(option.choices), help_text,
                              flag_values=flag_values)
        else:
            _DEFINE[option.flag_kind](flag, None, help_text, flag_values=flag_values)
        if option.range is not None:
            flag_ranges.attach(flag_values, flag, Range.of(option.range,
                                                           integer=option.flag_kind is int))
    return list(specs)


def corpus_options(flag_values: flags.FlagValues = flags.FLAGS) -> dict:
    """{option name: value} of the corpus flags that were given (not None)."""
    return {name: flag_values[flag].value for flag, (name, _) in corpus_flag_specs().items()
            if flag_values[flag].value is not None}


def flag_of(option_name: str) -> str:
    """The flag of a corpus option (`seed` -> `corpus_seed`)."""
    for flag, (name, _) in corpus_flag_specs().items():
        if name == option_name:
            return flag
    return option_name
