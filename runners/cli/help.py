"""A runner's `--help`: every flag of its own, grouped, with its default and a one-line doc.

absl's `--help` lists only the flags a runner defines in its own file, and none of those its
flags generated from the option dataclasses (defined in runners/cli/). Here the runner says
which groups its flags form (`define_flags` functions return them: model, training, data, ...);
every other flag not of absl's own (logging, debugging) goes under "this command". `--helpfull`
stays absl's: every flag with its whole help, absl's included.

Example output:
  Model:
    --n_layer=4                   Number of layers.
    --[no]untie_r=true            Per-layer position biases u, v.
  Training:
    --learning_rate=0.002         Peak learning rate.
"""
import re
import sys
import textwrap
from typing import List, Mapping, Optional, Sequence

from absl import flags

from runners.cli import flag_ranges

HELP_FLAGS = ("--help", "-help", "--helpshort", "-helpshort", "-h", "-?", "--h", "--?")
# A sentence ends at . ! or ? before a capital letter or the end (not "e.g. /CPU:0", not "...").
_FIRST_SENTENCE = re.compile(r"^(.+?(?<!e\.g)(?<!i\.e)[.!?])(?=\s+[A-Z]|$)", re.S)
_NAME_WIDTH = 30
_MULTI_SUFFIX = "; repeat this option to specify a list of values"  # absl's, of multi flags


def wants_help(argv: Sequence[str]) -> bool:
    """Whether the command line (before a `--` terminator) asks for `--help`."""
    for arg in argv[1:]:
        if arg == "--":
            return False
        if arg in HELP_FLAGS or arg in ("--help=true", "--helpshort=true"):
            return True
    return False


def own_flags(flag_values: flags.FlagValues) -> List[str]:
    """Names of the flags of `flag_values` that absl did not define itself (logging, help,
    debugging), in definition order."""
    absl = {flag.name for module, module_flags in flag_values.flags_by_module_dict().items()
            if module.startswith("absl.") for flag in module_flags}
    return [name for name in flag_values  # names and short names, in definition order
            if name == flag_values[name].name and name not in absl]


def one_line(text: str) -> str:
    """The first sentence of a flag's help, on one line."""
    text = " ".join((text or "").split()).replace(_MULTI_SUFFIX, "")
    match = _FIRST_SENTENCE.match(text)
    return match.group(1) if match else text


def _default(flag) -> str:
    value = flag.default
    if value is None:
        return ""
    if isinstance(value, bool):
        return "=" + ("true" if value else "false")
    if isinstance(value, (list, tuple)):
        return "=" + ",".join(str(v) for v in value)
    return "=" + str(value)


def flag_line(flag, required: bool = False, width: int = 100) -> str:
    """`  --name=default   first sentence of its help`, wrapped under the doc column."""
    prefix = "--[no]" if flag.boolean else "--"
    name = f"  {prefix}{flag.name}{_default(flag)}"
    doc = one_line(flag.help) + (" (required)" if required else "")
    declared = getattr(flag, flag_ranges.ATTRIBUTE, None)
    if declared is not None:  # the declared range (cli/flag_ranges.py), checked before main
        doc += f" Range: {declared.text()}."
    indent = " " * (_NAME_WIDTH + 2)
    if len(name) > _NAME_WIDTH:
        return name + "\n" + textwrap.fill(doc, width, initial_indent=indent,
                                           subsequent_indent=indent)
    return textwrap.fill(doc, width, initial_indent=name.ljust(_NAME_WIDTH + 2),
                         subsequent_indent=indent)


def help_text(flag_values: flags.FlagValues, groups: Mapping[str, Sequence[str]],
              doc: str = "", required: Sequence[str] = (), width: int = 100,
              hidden: Sequence[str] = ()) -> str:
    """The text of `--help`.

    Args:
      flag_values: the runner's parsed-or-not flags.
      groups: group title -> flag names, in the order shown; the runner's other flags follow
        under "This command".
      doc: the runner's docstring, shown first.
      required: names of the flags without which the command does not run.
      width: line width.
      hidden: flags defined but not shown (a shared flag the command does not honour and
        refuses with its own line, e.g. ablation.py's --model_dir).

    Returns:
      The text: `doc`, then one block per group, then how to see absl's own flags.
    """
    listed, blocks = set(), []
    own = [n for n in own_flags(flag_values) if n not in hidden]
    rest = [n for n in own if not any(n in names for names in groups.values())]
    for title, names in [*groups.items(), ("This command", rest)]:
        names = [n for n in names if n in own and n not in listed]
        if not names:
            continue
        listed.update(names)
        lines = [flag_line(flag_values[n], n in required, width) for n in names]
        blocks.append(f"{title}:\n" + "\n".join(lines))
    tail = ("--flagfile=FILE reads flags from a file (one --name=value per line). "
            "--helpfull shows every flag with its whole help, absl's own (logging, "
            "debugging) included.")
    return "\n\n".join([doc.strip(), *blocks, textwrap.fill(tail, width)]).lstrip() + "\n"


def print_help(flag_values: flags.FlagValues, groups: Mapping[str, Sequence[str]],
               required: Sequence[str] = (), out=None, hidden: Sequence[str] = ()) -> None:
    """Prints `help_text` of the `__main__` module's docstring to `out` (stdout)."""
    doc = getattr(sys.modules.get("__main__"), "__doc__", "") or ""
    (out or sys.stdout).write(help_text(flag_values, groups, doc, required, hidden=hidden))


def missing(flag_values: flags.FlagValues, required: Sequence[str]) -> Optional[str]:
    """The one usage error naming every required flag that was not given, or None."""
    names = [n for n in required if flag_values[n].value in (None, "", [], ())]
    if not names:
        return None
    listed = ", ".join(f"--{n}" for n in names)
    what = "flag" if len(names) == 1 else "flags"
    return f"missing required {what} {listed}; give {'it' if len(names) == 1 else 'them'} " \
           "(see --help)."

