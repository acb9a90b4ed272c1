"""Which rank of a data-parallel run was lost. A collective call tells a rank only that a peer closed its connection
or did not answer; every rank here keeps a sign of life in the run directory (every node sees it: a run over several
nodes shares one), ``<run>/.ranks/<rank>``, touched every ``INTERVAL_S`` by a thread of its own, so the ranks left
can name the one whose sign stopped: a process killed (the out-of-memory killer, a lost node) or stopped. The file
names the rank's process (``runs.process_record``), so a rank on the same host that has ended is named at once.

    python train.py trainer=ddp_cpu ...     # any run of more than one rank: RankLiveness is added by runs/run.py
"""
from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from lightning import Callback, LightningModule, Trainer

from sentence_lab.runs.process_record import has_ended, this_process
from sentence_lab.stop_signals import STOP_SIGNALS

log = logging.getLogger(__name__)

FOLDER = ".ranks"
INTERVAL_S = 1.0
STALE_S = 3 * INTERVAL_S  # a sign of life older than this: the rank is gone (its thread misses three beats)


class RankLiveness(Callback):
    """From ``setup`` to ``teardown`` of a run of more than one rank: this rank's file under ``<run>/.ranks/``
    touched every ``interval_s`` seconds (a daemon thread: it stops with the process, or when the process stops)."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = float(interval_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: Path | None = None

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if trainer.world_size < 2 or self._thread is not None:
            return
        self._file = sign_of_life(Path(trainer.default_root_dir), trainer.global_rank)
        self._file.parent.mkdir(parents=True, exist_ok=True)
        self._file.write_text(this_process() + "\n")
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, args=(self._file,), name="rank-liveness", daemon=True)
        self._thread.start()

    def _beat(self, path: Path) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                path.touch()
            except OSError:  # a full or vanished folder: the run itself will say so
                pass

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._file is not None:
            self._file.unlink(missing_ok=True)


def sign_of_life(run_dir: Path, rank: int) -> Path:
    """Where ``rank`` keeps its sign of life in ``run_dir``."""
    return Path(run_dir) / FOLDER / str(rank)


def silent_ranks(run_dir: Path, world_size: int, me: int, stale_s: float = STALE_S) -> list[int]:
    """The ranks other than ``me`` that are gone: their process on this host has ended, or their sign of life is older
    than ``stale_s``; looked for until one is or ``stale_s`` has passed (a rank on another host killed a moment ago
    still has a fresh sign). A rank without any sign is not named: the run directory may not be one that every node
    sees, and then nothing can be said. Stop signals that come meanwhile (a launcher ending this rank too) are let
    pass: the run is ending with this answer."""
    others = [rank for rank in range(world_size) if rank != me]
    deadline = time.monotonic() + stale_s + INTERVAL_S
    with _stop_signals_let_pass():
        while True:
            silent = [rank for rank in others if _gone(sign_of_life(run_dir, rank), stale_s)]
            if silent or time.monotonic() >= deadline:
                return silent
            time.sleep(INTERVAL_S / 4)


def _gone(path: Path, stale_s: float) -> bool:
    """A sign of life older than ``stale_s``, or naming a process of this host that has ended."""
    try:
        age = time.time() - path.stat().st_mtime
        record = path.read_text()
    except OSError:
        return False
    return age > stale_s or has_ended(record)


@contextlib.contextmanager
def _stop_signals_let_pass() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGUSR2 do nothing while the block runs (in the main thread; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)
