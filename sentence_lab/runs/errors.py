"""How a run ends when something goes wrong: one line on stderr naming the cause, the traceback in the run's log,
and an exit code that tells the truth (1 for an error, 128 + N for a run stopped by signal N)."""
from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from sentence_lab.runs.run_dir import file_handlers
from sentence_lab.training.non_finite_checks import NonFiniteShare, NonFiniteTraining


class RunInterrupted(Exception):
    """Training stopped by a signal after writing what it could (``checkpoints/interrupted.ckpt``)."""

    def __init__(self, signum: int, steps_done: int | None, run_dir: Path) -> None:
        """``steps_done``: the training step it stopped at; None outside training (preparing the data, testing)."""
        self.signum, self.steps_done, self.run_dir = int(signum), steps_done, run_dir
        name = signal.Signals(self.signum).name + (f" at step {steps_done}" if steps_done is not None else "")
        written = [f"checkpoints/{n}" for n in ("interrupted.ckpt", "last.ckpt")
                   if (Path(run_dir) / "checkpoints" / n).is_file()]
        if written:
            super().__init__(f"stopped by {name}; {' and '.join(written)} "
                             f"{'are' if len(written) > 1 else 'is'} in {run_dir}: continue with python train.py "
                             "resume=true")
        else:
            super().__init__(f"stopped by {name}, before any checkpoint was written: run the command again")

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by signal N."""
        return 128 + self.signum


class PeerLost(RuntimeError):
    """A data-parallel rank lost its connection to a peer, or waited for its peers longer than the process group's
    timeout: another rank died or hangs. ``lost``: the ranks whose sign of life stopped (``runs.rank_liveness``)."""

    CLOSED = ("connection closed by peer", "connection reset by peer", "broken pipe")
    PATTERNS = ("timed out", "timeout", *CLOSED)

    def __init__(self, rank: int, timeout_s: float | None, cause: BaseException, lost: Sequence[int] = ()) -> None:
        self.rank, self.lost = rank, list(lost)
        who = f"rank {', '.join(map(str, self.lost))}" if self.lost else "a peer"
        closed = any(p in str(cause).lower() for p in self.CLOSED)
        if closed:
            what = f"the connection to {who} closed"
        else:
            what = f"{who} did not answer " + (f"within the process group's timeout ({timeout_s:.0f} s)" if timeout_s
                                               else "in time")
        why = " (its sign of life stopped: killed, stopped, or its node lost)" if self.lost else \
            ", so another rank died or hangs"
        hint = "" if closed else \
            "; raise trainer.strategy.timeout.seconds if the per-epoch evaluation on rank 0 takes longer"
        super().__init__(f"DDP rank {rank}: {what}{why} ({one_line(cause)}); its log says why; continue with "
                         f"python train.py resume=true{hint}")

    @classmethod
    def matches(cls, err: BaseException) -> bool:
        """Whether ``err`` is a collective call's timeout or a lost peer connection (gloo's and NCCL's wording)."""
        return isinstance(err, RuntimeError) and any(p in str(err).lower() for p in cls.PATTERNS)


def write_traceback_to_logs(err: BaseException) -> list[Path]:
    """Append ``err``'s traceback to every log file (not to the screen); returns the files written."""
    text = "".join(traceback.format_exception(err))
    files = list(dict.fromkeys(Path(h.baseFilename) for _, h in file_handlers()))
    for handler_file in files:
        with open(handler_file, "a", encoding="utf-8") as out:
            out.write(f"[ERROR] {type(err).__name__}: traceback\n{text}")
    return files


def one_line(err: BaseException) -> str:
    """The error's message on one line (its first line; the type when it has none)."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return message if isinstance(err, (ValueError, FileNotFoundError, OSError, RunInterrupted, PeerLost,
                                       NonFiniteTraining, NonFiniteShare)) \
        else f"{type(err).__name__}: {message}"


def report(err: BaseException) -> None:
    """One line on stderr naming the cause (and where the traceback went)."""
    files = write_traceback_to_logs(err)
    where = f" (traceback in {files[0]}; show_traceback=true prints it here)" if files else ""
    print(f"error: {one_line(err)}{where}", file=sys.stderr, flush=True)
