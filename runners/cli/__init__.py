"""What every runner shares: a quiet start-up, path checks, and one error line with an exit code.

Every runner starts the same way; this is the one place where imports come after a statement:

    from runners import cli
    cli.quiet_start()          # before anything imports TensorFlow (see cli/startup.py)

    from absl import flags     # noqa: E402 - every other import follows quiet_start
    import txl_tf              # noqa: E402
    ...
    def main(argv):
        cli.check_directories(model_dir=FLAGS.model_dir)   # cli/paths.py
        ...
    if __name__ == "__main__":
        cli.run(main)          # cli/app.py; exit codes in cli/errors.py

Imports inside functions are for what a run may not need at all (an optional dependency such as
torch, or a heavy module of one branch), never to order start-up.

Modules: startup (quiet_start), paths (check_directories, check_files), dir_lock (locked:
one run per directory), errors (exit codes,
classify), app (run), dataclass_flags (flags generated from option dataclasses), model_flags,
train_flags, data_flags (the flags of the model, of a training run and of the corpus).
"""
from runners.cli.app import run  # noqa: F401
from runners.cli.errors import (  # noqa: F401
    INTERRUPTED, OK, RUNTIME_ERROR, USAGE_ERROR, classify)
from runners.cli.dir_lock import is_chief_process, locked  # noqa: F401
from runners.cli.paths import check_directories, check_files  # noqa: F401
from runners.cli.startup import quiet_start  # noqa: F401
