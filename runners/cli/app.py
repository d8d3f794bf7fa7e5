"""`run(main, groups, required)`: absl's `app.run` with a grouped `--help` (cli/help.py), the
missing required flags in one line, and a bad flag and every expected failure as one line.

Nothing here imports TensorFlow: a runner's `--help` and its usage errors come before it loads
(the runner calls `cli.quiet_start()` in `main`, after its checks of the flags).

`--verbosity=1` prints the traceback above the line; absl's INFO lines are off unless
`--verbosity` is given (`--verbosity=0` shows them).

SIGINT (Ctrl-C) and SIGTERM mean the same for every runner: `main` runs under the process's one
handler (`txl_tf/training/interruption.py`: copies of one press within a second are one press;
the first stops the work, with nothing half-written, the training loop after saving a
checkpoint; a second press exits at once), and the stop ends in one line, exit code 130.
"""
import logging as std_logging
import sys
import traceback

from absl import app, flags, logging

from runners.cli import errors, flag_ranges, flagfiles, help as help_lib
from txl_tf.training import interruption


def _usage_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(errors.USAGE_ERROR)


def _flags_parser(groups, required, hidden=(), flag_values=None):
    """absl's flag parsing with `--help` as cli/help.py prints it, a bad flag as one line and
    exit code 2, and every missing required flag named in one line (`flag_values`: default
    `flags.FLAGS`; tests parse into their own)."""
    def parse(argv):
        fv = flags.FLAGS if flag_values is None else flag_values
        if help_lib.wants_help(argv):
            help_lib.print_help(fv, groups or {}, required, hidden=hidden)
            sys.exit(errors.OK)
        try:
            flagfiles.check_utf8(argv)
            flagfiles.check_flagfiles(argv)
        except app.UsageError as error:
            _usage_error(str(error))
        try:
            remaining = fv(argv)
        except flags.Error as error:
            text = "; ".join(line.strip().rstrip(".") for line in str(error).splitlines()
                             if line.strip())
            _usage_error(f"{text}{flag_ranges.range_of_error(fv, text)}; see --help for the "
                         "flags.")
        try:
            flag_ranges.check_flag_ranges(fv)
        except app.UsageError as error:
            _usage_error(str(error))
        problem = help_lib.missing(fv, required)
        if problem:
            _usage_error(problem)
        return remaining
    return parse


def _verbosity():
    """--verbosity when the user gave it, else None."""
    flag = flags.FLAGS["verbosity"]
    return flag.value if flag.present else None


def _main_with_one_error_line(main):
    def wrapped(argv):
        verbosity = _verbosity()
        if verbosity is None:
            logging.set_verbosity(logging.WARNING)
        try:
            with interruption.handling_signals():
                return main(argv)
        except KeyboardInterrupt as error:  # `interruption.Interrupted` names its signal
            name = getattr(error, "signal_name", "SIGINT")
            print(f"error: interrupted ({name}) before the work was done; nothing was left "
                  "half-written: run the same command again.", file=sys.stderr, flush=True)
            sys.exit(errors.INTERRUPTED)
        except Exception as error:  # noqa: BLE001 (sorted into expected failures and bugs)
            result = errors.classify(error)
            if result is None:
                raise
            if verbosity is not None and verbosity >= 1:
                traceback.print_exc()
            code, message = result
            message = " ".join(str(message).split()) or type(error).__name__
            if verbosity is None:  # objects of the failed work warn as they are deleted at exit
                std_logging.getLogger("tensorflow").setLevel(std_logging.ERROR)
            print(f"error: {message}", file=sys.stderr, flush=True)
            sys.exit(code)
    return wrapped


def run(main, groups=None, required=(), hidden=()) -> None:
    """`absl.app.run(main)` with `--help`, bad flags and expected failures as above.

    Args:
      main: the runner's `main(argv)`.
      groups: group title -> flag names for `--help` (cli/help.py); the runner's other flags
        are listed under "This command".
      required: flags the command cannot run without; all the missing ones are named in one
        usage error before `main` runs.
      hidden: flags defined (shared definitions) that the command does not honour: left out of
        `--help`; the command refuses them itself.
    """
    app.run(_main_with_one_error_line(main),
            flags_parser=_flags_parser(groups, required, hidden))
