"""Ctrl-C (SIGINT) and SIGTERM, the one meaning of both for every runner and every phase of a run.

One press is one, however many copies of it arrive: the terminal signals the whole process
group, and a wrapper such as `timeout` forwards the signal again (coreutils' `timeout` sends it
to its child and then to the group), so one Ctrl-C can arrive two or three times within
milliseconds. Copies of the same signal that arrive within `DUPLICATE_WINDOW_SECONDS` of the
press they copy count as that press; the same signal after the window, or another signal, is a
second press.

  first press   Inside a `StopOnSignal` context (the training loop of a single-process run):
                the run stops after the current loop of steps and saves a checkpoint there
                (`TrainingInterrupted`, exit code 130). Anywhere else (flag checks, data
                preparation, the first compilation, saves, evaluation, export, generation):
                `Interrupted` (a `KeyboardInterrupt`) is raised in the main thread at once, or
                as soon as TensorFlow's C++ code running there returns; every file is written
                under a temporary name and renamed into place, so the writes in progress are
                dropped and nothing is left half-written (exit code 130).
  second press  Exits at once (`os._exit(130)`), without saving; the files already renamed into
                place (the last checkpoint, a prepared data directory's finished files) stay.

Python runs a signal handler only between bytecodes, so a handler alone would wait for the
compiled code running in TensorFlow's C++ code to return. `SignalHandler` therefore also has the
interpreter's C-level handler write each signal's number to a socket (`signal.set_wakeup_fd`),
which a thread reads as it arrives: each press is acknowledged at once and the second ends the
process at once (checkpoints are written atomically and the directory locks are released by the
kernel, so nothing is left half-written).

A raise from a signal handler is lost when the main thread is inside C code that clears Python's
errors at that moment (CPython's `abc.register` swallowed one while data was being prepared: the
run said it was stopping and then finished and exited 0). So until the first `Interrupted` is
seen on its way out (or the block that installed the handler ends), the handler raises it again
every `RERAISE_SECONDS`, except where it is already propagating (an `except`, `finally` or
`__exit__` handling it).

`runners/cli/app.py` installs the handler for every runner (`handling_signals()`); the library's
`train` opens `StopOnSignal` itself, which installs it when no runner did.

Example:
  >>> with StopOnSignal(echo=print) as stop:
  ...     while not stop.requested and step < end:
  ...         step = train_some_steps()
  >>> if stop.requested:
  ...     save(step)
"""
import _thread
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from typing import Callable, Optional

INTERRUPTED_EXIT_CODE = 130  # the shell's code of a process ended by SIGINT (128 + 2)
# Copies of one press (a process group's signal forwarded again by `timeout`, a supervisor
# signalling both the group and the process) arrive within milliseconds of each other; a person
# pressing Ctrl-C twice takes longer than this.
DUPLICATE_WINDOW_SECONDS = 1.0
RERAISE_SECONDS = 0.2  # how soon a first press's `Interrupted` is raised again if it was lost
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(RuntimeError):
    """The run stopped on a signal after saving a checkpoint (exit code 130)."""
    exit_code = INTERRUPTED_EXIT_CODE


class Interrupted(KeyboardInterrupt):
    """A signal stopped work that had nothing to save at that point; the writes in progress
    were dropped (exit code 130).

    Attributes:
      signal_name: 'SIGINT' or 'SIGTERM'.
    """
    exit_code = INTERRUPTED_EXIT_CODE

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class SignalHandler:
    """The process's handler of SIGINT and SIGTERM (the module docstring says what they mean).

    Attributes:
      requested: the name of the first press ('SIGINT'), or None.
      deferring: how many `StopOnSignal` contexts are open (> 0: a press asks the training loop
        to stop at its next boundary instead of raising `Interrupted`).
    """

    def __init__(self, echo: Callable[[str], None] = _stderr,
                 window: float = DUPLICATE_WINDOW_SECONDS, signals=HANDLED_SIGNALS,
                 clock: Callable[[], float] = time.monotonic):
        self.echo = echo
        self.window = window
        self.signals = tuple(signals)
        self.clock = clock
        self.requested: Optional[str] = None
        self.deferring = 0
        self._pressed = {}  # signum -> clock time of the press its copies belong to
        self._raise_pending = False  # a first press outside the loop, not raised yet
        self._seen_propagating = False  # the raised `Interrupted` reached an except/finally
        self._stopping = False  # `uninstall` began: nothing is raised or re-raised any more
        self._own_bytes = {}  # signum -> wakeup bytes of this handler's own interrupt_main
        self._raised_outside = False  # the first press came outside the training loop
        self._lock = threading.RLock()  # the main thread's handler may run while it holds it
        self._old_handlers = {}
        self._old_wakeup = -1
        self._sockets = None
        self._thread = None

    def arrived(self, signum: int, now: Optional[float] = None) -> str:
        """Counts one arrival of `signum` (the watcher thread calls it for each one) at clock
        time `now` (default: the clock's now).

        Returns:
          'copy' (within the window of the same signal's press: ignored), 'first' (the first
          press: acknowledged) or 'second' (exits the process at once, unless the handler's
          `exit` was replaced).
        """
        name = signal.Signals(signum).name
        with self._lock:
            now = self.clock() if now is None else now
            pressed = self._pressed.get(signum)
            if pressed is not None and now - pressed < self.window:
                return "copy"
            self._pressed[signum] = now
            if self.requested is None:
                self.requested = name
                first = True
                raise_now = self._raise_pending = self._raised_outside = self.deferring == 0
            else:
                first = False
        if not first:
            if self.deferring:
                self.echo(f"error: {name} again: exited at once, without saving; the last "
                          "saved checkpoint is kept (run the same command to resume from it).")
            else:
                self.echo(f"error: {name} again: exited at once; the files being written "
                          "were left under temporary names, none half-written under its own "
                          "(run the same command again).")
            self.exit(INTERRUPTED_EXIT_CODE)
            return "second"
        if self.deferring:
            self.echo(f"{name}: stopping after the current loop of steps to save a checkpoint "
                      f"(send it again, e.g. Ctrl-C, to exit at once without saving).")
        else:
            self.echo(f"{name}: stopping; the files being written are dropped, none is left "
                      "half-written (send it again, e.g. Ctrl-C, to exit at once).")
        if raise_now:  # the main thread raises `Interrupted` in `_python_handler`
            self._interrupt_main(signum)
            if self._thread is not None:  # installed: raise it again until it is seen
                threading.Thread(target=self._raise_until_seen, args=(signum,), daemon=True,
                                 name="signal-reraise").start()
        return "first"

    def _interrupt_main(self, signum: int) -> bool:
        """Has the main thread call `_python_handler` (its wakeup byte is not a press);
        False once `uninstall` began."""
        with self._lock:
            if self._stopping:
                return False
            self._own_bytes[signum] = self._own_bytes.get(signum, 0) + 1
            _thread.interrupt_main(signum)  # under the lock: never after `uninstall` began
            return True

    def _raise_until_seen(self, signum: int) -> None:
        """Raises the first press's `Interrupted` again every `RERAISE_SECONDS` until it is
        seen propagating, the training loop defers it, or `uninstall` begins."""
        while True:
            time.sleep(RERAISE_SECONDS)
            with self._lock:
                if self._seen_propagating or self.deferring:
                    return
                self._raise_pending = True
                if not self._interrupt_main(signum):
                    return

    exit = staticmethod(os._exit)

    def _python_handler(self, signum, frame) -> None:  # noqa: ARG002 (signal's signature)
        """Runs in the main thread between bytecodes: raises `Interrupted` once, after a first
        press outside the training loop."""
        with self._lock:
            if not self._raise_pending or self._stopping:
                return
            self._raise_pending = False
            if isinstance(sys.exc_info()[1], Interrupted):  # on its way out already
                self._seen_propagating = True
                return
        raise Interrupted(self.requested)

    def _watch(self, reader: socket.socket) -> None:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return
            now = self.clock()  # the time they arrived, not the time each is counted
            for signum in data:
                if signum in self.signals and not self._own_byte(signum):
                    self.arrived(signum, now)

    def _own_byte(self, signum: int) -> bool:
        """Whether a wakeup byte of `signum` is one of `_interrupt_main`'s (counted off)."""
        with self._lock:
            if self._own_bytes.get(signum, 0) > 0:
                self._own_bytes[signum] -= 1
                return True
            return False

    @property
    def installed(self) -> bool:
        return self._thread is not None

    def install(self) -> None:
        """Installs the handler (main thread only): the Python-level handlers, the wakeup socket
        and the thread reading it."""
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._sockets = (reader, writer)
        for signum in self.signals:  # a Python handler keeps the C-level one installed
            self._old_handlers[signum] = signal.signal(signum, self._python_handler)
        self._old_wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, args=(reader,), daemon=True,
                                        name="signal-handler")
        self._thread.start()

    def uninstall(self) -> None:
        """Restores the handlers found by `install`. A first press outside the training loop
        whose `Interrupted` was lost ends the block here: `Interrupted` is raised once the
        handlers are restored (the work may be done, but the run was asked to stop)."""
        with self._lock:
            self._stopping = True  # no `interrupt_main` after this
            lost = (self.requested is not None and self._raised_outside
                    and not self._seen_propagating and sys.exc_info()[1] is None)
        _let_pending_handlers_run()
        signal.set_wakeup_fd(self._old_wakeup)
        for signum, handler in self._old_handlers.items():
            if handler is not None:  # None: a handler not installed from Python
                signal.signal(signum, handler)
        self._old_handlers = {}
        reader, writer = self._sockets
        writer.close()
        reader.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        reader.close()
        self._thread = self._sockets = None
        if lost:
            raise Interrupted(self.requested)


def _let_pending_handlers_run() -> None:
    """A Python call: CPython runs the Python handlers of signals tripped so far on entering it
    (while they are still this module's, which then raise nothing)."""


_HANDLER: Optional[SignalHandler] = None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handling_signals(echo: Callable[[str], None] = _stderr):
    """The process's `SignalHandler` for the block (installed unless one already is; in a
    thread other than the main one nothing is installed and None is yielded)."""
    global _HANDLER
    if _HANDLER is not None or not _in_main_thread():
        yield _HANDLER
        return
    _HANDLER = SignalHandler(echo=echo)
    _HANDLER.install()
    try:
        yield _HANDLER
    finally:
        _HANDLER.uninstall()
        _HANDLER = None


class StopOnSignal:
    """A context in which the first SIGINT or SIGTERM requests a stop at the training loop's
    next boundary instead of raising `Interrupted` (a second one exits at once).

    Args:
      echo: where the acknowledgement lines go (stderr by default) when this context installs
        the handler.
      enabled: False: the context changes nothing (a worker of a multi-worker run, whose
        checkpoints are collective, or a thread other than the main one): a signal means what it
        means outside the loop.

    Attributes:
      requested: the name of the first signal received ('SIGINT'), or None.
    """

    def __init__(self, echo: Callable[[str], None] = _stderr, enabled: bool = True):
        self.echo = echo
        self.enabled = enabled and _in_main_thread()
        self._handler: Optional[SignalHandler] = None
        self._context = None

    @property
    def requested(self) -> Optional[str]:
        return None if self._handler is None else self._handler.requested

    def __enter__(self) -> "StopOnSignal":
        if not self.enabled:
            return self
        self._context = handling_signals(self.echo)
        self._handler = self._context.__enter__()
        with self._handler._lock:  # noqa: SLF001 (the handler's own lock)
            self._handler.deferring += 1
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        with self._handler._lock:  # noqa: SLF001
            self._handler.deferring -= 1
        self._context.__exit__(*exc)
