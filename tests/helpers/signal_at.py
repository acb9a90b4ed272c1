"""A stop signal sent by the process to itself at the moment a phase starts (not after a sleep): a Hydra callback,
so it is in place before the job's data is read. The moment is written to ``stamp`` (seconds since the epoch).

    +hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase +hydra.callbacks.signal.phase=checkpoint

Phases: ``data`` (the corpus preparation starts), ``load`` (a job's datamodule reads its corpus, prepared or from the
cache), ``checkpoint`` (inside ``torch.save``'s first write to a file named ``file``, e.g. ``last.ckpt``: the write a
signal used to cut), ``suite`` (the per-epoch suite starts), ``validation`` (a validation batch, the sanity check's
counted too), ``between`` (a sweep asks for its ``nth`` batch of trials,
none running), ``trial`` (Optuna has just created a sweep's ``nth`` trial: nothing else is recorded on it yet),
``results`` (a sweep starts telling the study how a trial's job ended: the run's files are written, the study is not
told). ``job``: count the calls of that multirun job alone (``nth`` of them), for phases inside a job.

    +hydra.callbacks.signal.phase=suite +hydra.callbacks.signal.job=1 +hydra.callbacks.signal.signal=SIGKILL"""
from __future__ import annotations

import functools
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
from hydra.experimental.callback import Callback


class SignalAtPhase(Callback):
    def __init__(self, phase: str, signal: str = "SIGTERM", nth: int = 1, file: str = "last.ckpt",
                 stamp: str | None = None, to: str = "self", job: int | None = None, pause_s: float = 0) -> None:
        """``to``: ``self``, or ``parent`` (the sweep's process, from a job a joblib worker runs). ``signal=none``
        with ``pause_s``: the phase waits that long after writing ``stamp`` (for a signal from outside, e.g. SLURM's
        ``scontrol requeue``, to land in it)."""
        self.settings = {"phase": phase, "signal": signal, "nth": nth, "file": file, "stamp": stamp, "to": to,
                         "job": job, "pause_s": pause_s}
        self.pause_s = float(pause_s)
        self.phase, self.signum, self.nth, self.file, self.to = phase, int(_signals()[signal]), int(nth), file, to
        self.stamp = Path(stamp) if stamp else None
        self.job = None if job is None else int(job)
        self.job_now: int | None = None
        self.seen = 0
        {"data": self._data, "load": self._load, "checkpoint": self._checkpoint, "suite": self._suite,
         "validation": self._validation,
         "between": self._between, "trial": self._trial, "results": self._results}[phase]()

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        """A multirun job starts (in this process): its number, for ``job``."""
        self.job_now = int(config.hydra.job.num)

    def __getstate__(self) -> dict:  # a joblib worker gets the callbacks pickled: it patches its own process
        return self.settings

    def __setstate__(self, settings: dict) -> None:
        type(self).__init__(self, **settings)

    def send(self) -> None:
        if self.stamp is not None:
            self.stamp.write_text(f"{time.time():.3f}\n")
        if self.signum:
            os.kill(os.getpid() if self.to == "self" else os.getppid(), self.signum)
        time.sleep(self.pause_s)

    def _due(self) -> bool:
        if self.job is not None and self.job_now != self.job:
            return False
        self.seen += 1
        return self.seen == self.nth

    def _wrap(self, owner: Any, name: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapped(*args, **kwargs):
            if self._due():
                self.send()
            return original(*args, **kwargs)

        setattr(owner, name, wrapped)

    def _data(self) -> None:
        import sentence_lab.datamodules.corpus as corpus

        self._wrap(corpus, "prepare_corpus")

    def _load(self) -> None:
        import sentence_lab.datamodules.ordered_corpus as ordered_corpus

        self._wrap(ordered_corpus, "load_corpus")

    def _trial(self) -> None:
        from optuna.study import Study

        original, helper = Study.ask, self

        @functools.wraps(original)
        def ask(study, *args, **kwargs):
            trial = original(study, *args, **kwargs)
            if helper._due():  # the trial is in the storage; the sweep has recorded nothing on it
                helper.send()
            return trial

        Study.ask = ask  # the drill's patch, in the sweep's own process

    def _results(self) -> None:
        from sentence_lab.runs.optuna_sweep import PruningOptunaSweeper

        self._wrap(PruningOptunaSweeper, "tell")

    def _suite(self) -> None:
        from sentence_lab.training.eval_suite import EvalSuiteCallback

        self._wrap(EvalSuiteCallback, "_evaluate_on_rank_zero")

    def _validation(self) -> None:
        from sentence_lab.training.module import SentenceModel

        self._wrap(SentenceModel, "validation_step")

    def _between(self) -> None:
        from sentence_lab.runs.optuna_sweep import PruningOptunaSweeper

        self._wrap(PruningOptunaSweeper, "run_batch")

    def _checkpoint(self) -> None:
        import sentence_lab.checkpoints.lightning_io as checkpoint_io

        original, helper, writing = torch.save, self, {"name": ""}
        writer = "_write" if hasattr(checkpoint_io, "_write") else "atomic_torch_save"  # (an older checkout's)
        write = getattr(checkpoint_io, writer)

        def named_write(obj, path):  # the checkpoint being written, for torch.save below
            writing["name"] = Path(path).name
            try:
                return write(obj, path)
            finally:
                writing["name"] = ""

        setattr(checkpoint_io, writer, named_write)

        class SignalOnFirstWrite:
            def __init__(self, f) -> None:
                self.f, self.sent = f, False

            def write(self, data) -> int:
                if not self.sent:
                    self.sent = True
                    helper.send()
                return self.f.write(data)

            def __getattr__(self, name: str) -> Any:
                return getattr(self.f, name)

        @functools.wraps(original)
        def save(obj, f, *args, **kwargs):
            if writing["name"] == self.file and self._due():
                return original(obj, SignalOnFirstWrite(f), *args, **kwargs)
            return original(obj, f, *args, **kwargs)

        torch.save = save


def _signals() -> dict[str, int]:
    return {"SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT, "SIGKILL": signal.SIGKILL, "none": 0}
