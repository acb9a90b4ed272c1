"""A stop signal (SIGTERM from ``kill``, SLURM or a sweeper; SIGINT from Ctrl-C; SIGUSR2, SLURM's warning before a
time limit or a pre-emption, as submitit asks for it) ends a run or a sweep at once, and is never taken for a failure.

``stops_raise`` makes each of them raise ``Stopped`` where the process is (data preparation, a training step, the
per-epoch suite, between a sweep's trials), within a fraction of a second. ``Stopped`` is a ``BaseException``: no
``except Exception`` that records a task's or a job's failure takes it, so it travels up to the code that records an
interruption (the run's ``interrupted.ckpt``, the sweep's trial queued again) and the process exits 128 + N.

``signals_held`` is for writes a signal must not cut (a checkpoint: ``torch.save`` turns an exception raised inside its
writer into an I/O error, which would read as a full disk): a signal that arrives inside is held until the write has
ended, then delivered to the handler that was in place.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# SIGUSR2: sbatch --signal=USR2@<seconds> (submitit's); a job SLURM requeues then resumes (hydra_plugins/sentence_lab)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR2)


class Stopped(BaseException):
    """A stop signal arrived (not an ``Exception``: nothing records it as a failure)."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by signal N."""
        return 128 + self.signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stops_raise() -> Iterator[None]:
    """Inside, SIGTERM, SIGINT and SIGUSR2 raise ``Stopped``; the handlers before are given back after. A signal the
    process ignores (SIGINT in a background job of a non-interactive shell) stays ignored. Outside the main thread
    (where Python runs no handler) nothing changes."""
    if not _in_main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _raise_stopped)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


@contextmanager
def signals_held() -> Iterator[None]:
    """Inside, SIGTERM, SIGINT and SIGUSR2 are held (recorded, not handled); after, each held signal is delivered once
    to the handler in place before (``Stopped`` under ``stops_raise``, Lightning's own, Python's default). The
    process still stops, only after the write inside has ended, whole or failed for its own reason."""
    if not _in_main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(held):
            if previous[signal.Signals(signum)] is not signal.SIG_IGN:
                signal.raise_signal(signum)
