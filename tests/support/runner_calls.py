"""Running `runners/<name>.py` from a test: as a user runs it, in a process of its own
(`run_runner`), or in the test's own process (`call_runner`).

`run_runner` is the command line itself: a fresh Python that starts TensorFlow (3-5 s on a CPU
machine), its real exit status, its C++ start-up lines, signals and locks of its own. Use it when
that boundary is what the test checks.

`call_runner` runs the same file as `__main__` in this process (`runpy`), with `sys.argv` set
and the working directory changed for the call: the same flag parsing and range checks, the
same `main`, the same one error line and exit code (`runners/cli/app.py` ends every run with
`sys.exit`), without the start-up. Its output is what the runner printed to `sys.stdout` and
`sys.stderr`, absl's log lines and the Python warnings a plain interpreter would show (its
default warning filters); the lines TensorFlow's C++ code writes to the file descriptors are not
in it.
For the call, the flags that runners' modules defined into absl's global `flags.FLAGS` earlier
in this process are set aside (another test may have imported a runner and defined its flags,
as a process that runs one runner never has) and registered again after it; the flags the
runner defined are removed afterwards, so that the next call defines them anew (the runners under runners/tools/ that
define flags as their modules are imported are for `run_runner` only).

Both return a `subprocess.CompletedProcess` (returncode, stdout, stderr as text).

Example:
  >>> proc = call_runner("evaluate", ["--model_dir=M", "--batch_size=0"], cwd=tmp_path)
  >>> proc.returncode, proc.stderr.splitlines()[-1]
  (2, 'error: --batch_size must be an integer in [1, 1048576] (streams), got 0')
"""
import contextlib
import io
import os
import runpy
import subprocess
import sys
import warnings

# A plain interpreter's warning filters (no `python -W`), in the order `filterwarnings` adds
# them (each in front of the ones before); other warnings are shown once per place.
_DEFAULT_WARNING_FILTERS = [("ignore", ResourceWarning, ""), ("ignore", ImportWarning, ""),
                            ("ignore", PendingDeprecationWarning, ""),
                            ("ignore", DeprecationWarning, ""),
                            ("default", DeprecationWarning, "__main__")]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runner_path(name):
    """The path of `runners/<name>.py` (`name` may name a sub-folder: "tools/benchmark")."""
    return os.path.join(REPO, "runners", f"{name}.py")


def user_env(**changes):
    """The environment of a user's shell: this one without TF_CPP_MIN_LOG_LEVEL (the runners
    keep TensorFlow's start-up lines off the console themselves), PYTHONPATH the repository,
    with `changes` (a value None removes the variable)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_runner(name, args, cwd=REPO, wrap=(), env=None, timeout=600, **popen):
    """`python runners/<name>.py args` in a process of its own, as a user types it.

    Args:
      name: the runner, e.g. "train" or "tools/benchmark".
      args: its command-line arguments.
      cwd: the working directory.
      wrap: a command prefix (e.g. `prlimit --as=...`, `unshare -m ...`).
      env: the environment; default `user_env()`.
      timeout: seconds before `subprocess.TimeoutExpired`.
      popen: more keywords of `subprocess.run` (e.g. preexec_fn).
    """
    command = list(wrap) + [sys.executable, runner_path(name)] + [str(a) for a in args]
    return subprocess.run(command, capture_output=True, text=True, cwd=str(cwd),
                          env=user_env() if env is None else env, timeout=timeout, **popen)


def _is_runners_module(module: str) -> bool:
    """A module name of runners/ (imported, or run as `__main__` by a call)."""
    return module == "__main__" or module.split(".")[0] == "runners"


def set_aside_runner_flags(fv) -> list:
    """Removes from `fv` every flag a module of runners/ defined; returns [(module, Flag)] for
    `restore_flags`."""
    found = {}
    for module, module_flags in fv.flags_by_module_dict().items():
        if _is_runners_module(module):
            for flag in module_flags:
                found.setdefault(flag.name, (module, flag))
    for name in found:
        if name in fv:
            delattr(fv, name)
    return list(found.values())


def restore_flags(fv, aside) -> None:
    """Registers again the flags `set_aside_runner_flags` removed (their values unchanged)."""
    for module, flag in aside:
        if flag.name not in fv:
            fv[flag.name] = flag
            fv.register_flag_by_module(module, flag)


def call_runner(name, args, cwd=REPO):
    """`runners/<name>.py args` run as `__main__` in this process; its exit code (the
    `sys.exit` that ends every runner; 0 when it returned) and what it printed."""
    from absl import app, flags, logging  # noqa: F401  (their own flags stay defined)

    app.define_help_flags()  # --help, --helpfull ...: absl defines them once per process
    fv = flags.FLAGS
    aside = set_aside_runner_flags(fv)
    defined = set(fv)
    out, err = io.StringIO(), io.StringIO()
    argv, here = sys.argv, os.getcwd()
    log = logging.get_absl_handler().python_handler
    log_stream = log.stream
    code = 0
    try:
        sys.argv = [runner_path(name)] + [str(a) for a in args]
        os.chdir(str(cwd))
        log.stream = err
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as shown:
            warnings.resetwarnings()
            for action, category, module in _DEFAULT_WARNING_FILTERS:
                warnings.filterwarnings(action, category=category, module=module)
            try:
                runpy.run_path(runner_path(name), run_name="__main__")
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None
                                                                    else 1)
                if not isinstance(stop.code, (int, type(None))):
                    print(stop.code, file=sys.stderr)
            for w in shown:
                err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno,
                                                 w.line))
    finally:
        log.stream = log_stream
        sys.argv = argv
        os.chdir(here)
        for flag in set(fv) - defined:
            delattr(fv, flag)
        fv.unparse_flags()
        restore_flags(fv, aside)
    return subprocess.CompletedProcess([runner_path(name)] + [str(a) for a in args], code,
                                       out.getvalue(), err.getvalue())
