"""`run(main)`: absl's `app.run` with a bad flag and every expected failure as one line.

`--verbosity=1` prints the traceback above the line; absl's INFO lines are off unless
`--verbosity` is given (`--verbosity=0` shows them).
"""
import sys
import traceback

from absl import app, flags, logging

from runners.cli import errors


def _parse_flags(argv):
    """absl's flag parsing, with a bad flag as one line and exit code 2."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as error:
        print(f"error: {str(error).rstrip('.')}; see --helpshort for the flags.",
              file=sys.stderr)
        sys.exit(errors.USAGE_ERROR)


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
            return main(argv)
        except KeyboardInterrupt:
            print("error: interrupted.", file=sys.stderr)
            sys.exit(errors.INTERRUPTED)
        except Exception as error:  # noqa: BLE001 (sorted into expected failures and bugs)
            result = errors.classify(error)
            if result is None:
                raise
            if verbosity is not None and verbosity >= 1:
                traceback.print_exc()
            code, message = result
            message = " ".join(str(message).split()) or type(error).__name__
            print(f"error: {message}", file=sys.stderr, flush=True)
            sys.exit(code)
    return wrapped


def run(main) -> None:
    """`absl.app.run(main)` with bad flags and expected failures as one line (see above)."""
    app.run(_main_with_one_error_line(main), flags_parser=_parse_flags)
