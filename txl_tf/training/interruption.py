"""Ctrl-C (SIGINT) and SIGTERM during training: the first asks the run to stop after the
current loop of steps and save a checkpoint there; a second one exits at once, without saving.

Python runs a signal handler only between bytecodes, so a handler alone would wait for the
compiled loop running in TensorFlow's C++ code to return. `StopOnSignal` therefore also has
the interpreter's C-level handler write each signal's number to a socket
(`signal.set_wakeup_fd`), which a thread reads as it arrives: the first signal is acknowledged
at once and the second ends the process at once (`os._exit`; checkpoints are written atomically
and the directory locks are released by the kernel, so nothing is left half-written).

Example:
  >>> with StopOnSignal(echo=print) as stop:
  ...     while not stop.requested and step < end:
  ...         step = train_some_steps()
  >>> if stop.requested:
  ...     save(step)
"""
import os
import signal
import socket
import sys
import threading
from typing import Callable, Optional

INTERRUPTED_EXIT_CODE = 130  # the shell's code of a process ended by SIGINT (128 + 2)


class TrainingInterrupted(RuntimeError):
    """The run stopped on a signal after saving a checkpoint (exit code 130)."""
    exit_code = INTERRUPTED_EXIT_CODE


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class StopOnSignal:
    """A context in which SIGINT and SIGTERM request a stop instead of ending the process.

    Args:
      echo: where the acknowledgement lines go (stderr by default).
      enabled: False: the context changes nothing (a worker of a multi-worker run, whose
        checkpoints are collective, or a thread other than the main one).
      signals: the signals handled.

    Attributes:
      requested: the name of the first signal received ('SIGINT'), or None.
    """

    def __init__(self, echo: Callable[[str], None] = _stderr, enabled: bool = True,
                 signals=(signal.SIGINT, signal.SIGTERM)):
        self.echo = echo
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.signals = tuple(signals)
        self.requested: Optional[str] = None
        self._old_handlers = {}
        self._old_wakeup = -1
        self._sockets = None
        self._thread = None

    def _received(self, signum: int) -> None:
        """The first signal requests the stop; a second one exits at once."""
        name = signal.Signals(signum).name
        if self.requested is None:
            self.requested = name
            self.echo(f"{name}: stopping after the current loop of steps to save a checkpoint "
                      f"(send it again, e.g. Ctrl-C, to exit at once without saving).")
            return
        self.echo(f"error: {name} again: exited at once, without saving; the last saved "
                  "checkpoint is kept (run the same command to resume from it).")
        os._exit(INTERRUPTED_EXIT_CODE)

    def _watch(self, reader: socket.socket) -> None:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in self.signals:
                    self._received(signum)

    def __enter__(self) -> "StopOnSignal":
        if not self.enabled:
            return self
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._sockets = (reader, writer)
        for signum in self.signals:  # a Python handler keeps the C-level one installed
            self._old_handlers[signum] = signal.signal(signum, lambda *_: None)
        self._old_wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, args=(reader,), daemon=True,
                                        name="stop-on-signal")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        signal.set_wakeup_fd(self._old_wakeup)
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)
        reader, writer = self._sockets
        writer.close()
        reader.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        reader.close()
