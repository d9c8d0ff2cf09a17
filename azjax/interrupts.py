"""Ctrl-C and SIGTERM: `StopSignals` turns the first into a request to stop a training run between iterations
(`trainer.train`); `exit_at_once` ends the process at once wherever its main thread is, used by `azjax train` (for a
second Ctrl-C, after the first asked the run to stop) and by every script in experiments/.

No KeyboardInterrupt is raised: one that unwinds through JAX while it traces, lowers or compiles crashes the
interpreter as it exits. The handler flushes stdout and stderr, writes one line on stderr and ends the process with
`os._exit`. While the main thread is inside a long call that does not return to Python (XLA compiling), Python runs
no handler until the call returns, so the signal also wakes a watching thread (`signal.set_wakeup_fd`) that does
the same. A handler installed over it for a while keeps the signal (`trainer.train`'s stops a run between
iterations and hands the second Ctrl-C on).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

INTERRUPTED_STATUS = 130  # 128 + SIGINT, as a shell reports a process that Ctrl-C ended

_stopping = threading.Lock()  # taken by whichever of the handler and the watching thread ends the process first


@contextlib.contextmanager
def exit_at_once(message: Callable[[], str], status: int = INTERRUPTED_STATUS) -> Iterator[None]:
    """While inside, SIGINT prints `message()` on stderr and exits with `status` at once (see the module
    docstring). Outside the main thread, or where SIGINT is ignored (a background job), it does nothing."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return

    def handler(signum: int, frame) -> None:
        _stop(message, status)

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd's requirement: the C-level handler never blocks
    previous_fd = signal.set_wakeup_fd(write_fd)
    previous = signal.signal(signal.SIGINT, handler)
    watcher = threading.Thread(target=_watch, args=(read_fd, handler, message, status), name="interrupt",
                               daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the watcher reads the end of the pipe and returns
        watcher.join()
        os.close(read_fd)


def _watch(read_fd: int, handler: Callable, message: Callable[[], str], status: int) -> None:
    """Waits for the signal numbers Python's C-level handler writes to `read_fd`; ends the process at a SIGINT
    while `handler` is SIGINT's handler (not while another one is, such as the trainer's)."""
    while True:
        received = os.read(read_fd, 64)
        if not received:
            return
        if signal.SIGINT in received and signal.getsignal(signal.SIGINT) is handler:
            _stop(message, status)


def _stop(message: Callable[[], str], status: int) -> None:
    """Flushes stdout and stderr, writes `message()` on stderr and ends the process with `status`, once."""
    if not _stopping.acquire(blocking=False):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, RuntimeError, ValueError):  # closed, or interrupted in the middle of a write of its own
            pass
    try:
        start = "\n" if os.isatty(2) else ""  # past the terminal's "^C"
        os.write(2, f"{start}{message()}\n".encode())
    except OSError:
        pass
    os._exit(status)


class StopSignals:
    """Turns the first SIGINT (Ctrl-C) or SIGTERM into a request, `requested`, to stop between iterations.

    The handler only sets a flag: the iteration is a jitted call on donated buffers, and cutting it short would
    lose the run state. A second signal stops at once, through the handler that was there before (Python's Ctrl-C
    raises KeyboardInterrupt, SIGTERM terminates; `azjax train` installs one that exits at once); checkpoints are
    written atomically, so the last one stays loadable. While JAX traces and compiles (`holding()`), a
    KeyboardInterrupt waits until it is done: one raised inside the tracing leaves XLA's half-built program to be
    freed as the exception unwinds, which crashes the interpreter. Outside the main thread (where Python delivers
    signals) it installs nothing, and a signal the process was told to ignore (e.g. SIGINT of a background job)
    stays ignored.
    """

    def __init__(self, log: Callable[[str], None]):
        self.requested: str | None = None  # the name of the signal that asked to stop
        self._log = log
        self._previous: dict[int, Callable | int | None] = {}
        self._holding = False
        self._held: int | None = None  # a second signal that waits for the end of `holding()`

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        self._restore()

    @contextlib.contextmanager
    def holding(self):
        """A section (JAX's tracing and compilation) out of which a second Ctrl-C's KeyboardInterrupt is kept."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._held is not None:
            self._stop_at_once(self._held)

    def _handle(self, signum: int, frame) -> None:
        if self.requested is None:
            self.requested = signal.Signals(signum).name
            self._log(
                f"\n{self.requested} received: stopping after this iteration and saving a checkpoint "
                "(send it again to stop at once; the last checkpoint is kept)."
            )
        elif self._holding and self._previous.get(signum) is signal.default_int_handler:
            self._held = signum
        else:
            self._stop_at_once(signum)

    def _stop_at_once(self, signum: int) -> None:
        """Hands `signum` to the handler that was there before: it raises, exits or terminates the process."""
        previous = self._previous.get(signum)
        self._restore()
        if callable(previous):
            previous(signum, None)
        else:  # the default action (SIGTERM terminates), which only the signal itself can take
            signal.raise_signal(signum)

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous = {}

