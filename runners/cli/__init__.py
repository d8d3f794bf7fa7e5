"""What every runner shares: a grouped --help, a quiet start-up, path checks, and one error line
with an exit code.

Every runner has the same shape. Its module imports only what defines and checks its flags (the
option dataclasses and `txl_tf.model.config` do not import TensorFlow), so that `--help` and every
usage error come at once; TensorFlow loads in `main`, after the checks:

    from absl import flags
    from runners import cli
    from txl_tf.commands.train_options import TrainOptions       # TensorFlow-free
    ...
    def main(argv):
        cli.check_directories(model_dir=FLAGS.model_dir)   # cli/paths.py
        cli.quiet_start()          # imports TensorFlow without its start-up lines (startup.py)
        from txl_tf.commands.train import train            # the work, with TensorFlow
        ...
    if __name__ == "__main__":
        cli.run(main, groups=define_flags(), required=("model_dir",))   # cli/app.py, help.py

These function-level imports are deliberate: they keep TensorFlow off the help and usage path.
Other imports inside functions are for what a run may not need at all (an optional dependency
such as torch).

Modules: help (the grouped --help, missing required flags), startup (quiet_start), paths
(check_directories, check_files, check_data_dir, check_model_dirs), flagfiles (flag files and
the command line checked before absl reads them), locked and is_chief_process (one run per
directory: txl_tf/storage/dir_lock.py),
errors (exit codes, classify), app (run), dataclass_flags
(flags generated from option dataclasses), flag_ranges (every numeric flag's declared range,
checked before main), model_flags, train_flags, data_flags (the flags of
the model, of a training run and of the corpus).
"""
from runners.cli.app import run  # noqa: F401
from runners.cli.errors import (  # noqa: F401
    INTERRUPTED, OK, RUNTIME_ERROR, USAGE_ERROR, classify)
from txl_tf.storage.dir_lock import is_chief_process, locked  # noqa: F401
from runners.cli.paths import (  # noqa: F401
    check_data_dir, check_directories, check_files, check_model_dirs)
from runners.cli.startup import quiet_start  # noqa: F401
