"""Which checkpoint a command takes, in one place: the file names a run writes, the checkpoint ``evaluate.py`` and
the adapters take from a run directory (``resolve_checkpoint``), the one ``resume=true`` continues from
(``newest_resumable_checkpoint``), and the check of ``ckpt_path=``. Unreadable files are skipped, saying so."""
from __future__ import annotations

import logging
from pathlib import Path, PurePath

from omegaconf import DictConfig

from sentence_lab.checkpoints.files import checkpoint_problem
from sentence_lab.checkpoints.received import read_checkpoint

log = logging.getLogger(__name__)

INIT_NAME = "init.ckpt"
BEST_NAME = "best.ckpt"
LAST_NAME = "last.ckpt"


def by_recency(folder: Path) -> list[Path]:
    """The ``*.ckpt`` files of ``folder``, newest first (``init.ckpt``, the untrained model, last)."""
    files = [p for p in folder.glob("*.ckpt") if p.is_file()]
    return sorted(files, key=lambda p: (p.name != INIT_NAME, p.stat().st_mtime), reverse=True)


def newest_readable(candidates: list[Path], what: str) -> Path | None:
    """The first readable checkpoint of ``candidates`` (in the order given), logging each one skipped."""
    for path in candidates:
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        log.warning("%s: skipping %s: %s", what, path, problem)
    return None


def in_folder(recorded: object, folder: Path) -> Path | None:
    """A checkpoint path a run recorded, as the file of that name in ``folder`` (when there is one): a run folder's
    recorded paths are followed only inside it, so a folder copied elsewhere keeps working and a recorded path
    never leads out of it."""
    if not isinstance(recorded, str) or not recorded:
        return None
    name = PurePath(recorded.replace("\\", "/")).name
    candidate = folder / name
    return candidate if name.endswith(".ckpt") and candidate.is_file() else None


def _best_recorded_in(last: Path) -> Path | None:
    """The best checkpoint ``ModelCheckpoint`` recorded in ``last``, found by its name in ``last``'s folder."""
    state = read_checkpoint(last, mmap=True).get("callbacks", {})
    for key, value in (state.items() if isinstance(state, dict) else []):
        best = in_folder(value.get("best_model_path"), last.parent) if isinstance(value, dict) else None
        if str(key).startswith("ModelCheckpoint") and best is not None:
            return best
    return None


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file as it is (refused in one line when unreadable); a run directory (or its
    ``checkpoints/``) gives its best readable checkpoint: ``best.ckpt``, else the best path recorded in
    ``last.ckpt``, else ``last.ckpt``, else the newest other one. Unreadable files are skipped, saying so."""
    path = Path(path)
    if path.is_file():
        problem = checkpoint_problem(path)
        if problem:
            raise ValueError(f"ckpt_path={path}: {problem}: pass a .ckpt written by train.py or its run directory")
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint not found: {path}: "
                                "pass ckpt_path=<run dir> or <run dir>/checkpoints/<file>.ckpt")
    folder = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    last = folder / LAST_NAME
    candidates = [folder / BEST_NAME]
    if checkpoint_problem(last) is None:
        candidates += [p for p in [_best_recorded_in(last)] if p is not None] + [last]
    candidates += [p for p in by_recency(folder) if p not in candidates and p.name != INIT_NAME]
    found = newest_readable([p for p in dict.fromkeys(candidates) if p.is_file()], f"checkpoints of {folder}")
    if found is None:
        raise FileNotFoundError(f"no readable checkpoint in {folder}: pass ckpt_path=<run dir>/checkpoints/<file>.ckpt")
    return found


def newest_resumable_checkpoint(cfg: DictConfig) -> Path | None:
    """The checkpoint ``resume=true`` continues from: in the newest run of this task (``logs/<task_name>/runs/*``,
    by its newest checkpoint), ``last.ckpt``, else its newest other readable checkpoint (``init.ckpt`` aside).
    Unreadable files are skipped, saying so; a run with none readable gives way to the one before it."""
    runs = Path(cfg.paths.log_dir) / str(cfg.task_name) / "runs"
    here = Path(cfg.paths.output_dir).resolve()
    folders = [p for p in runs.glob("*/checkpoints") if p.parent.resolve() != here]
    trained = {f: [c for c in by_recency(f) if c.name != INIT_NAME] for f in folders}
    for folder in sorted((f for f in folders if trained[f]), key=lambda f: trained[f][0].stat().st_mtime,
                         reverse=True):
        found = resumable_checkpoint_in(folder.parent)
        if found is not None:
            return found
    return None


def resumable_checkpoint_in(run: Path) -> Path | None:
    """The checkpoint a run directory resumes from: ``last.ckpt``, else its newest other readable checkpoint
    (``init.ckpt`` aside); None when it has none readable."""
    folder = Path(run) / "checkpoints"
    trained = [c for c in by_recency(folder) if c.name != INIT_NAME] if folder.is_dir() else []
    last = folder / LAST_NAME
    order = ([last] if last.is_file() else []) + [c for c in trained if c != last]
    return newest_readable(order, "resume=true")


def checkpoints_in(run: Path) -> list[str]:
    """The names of the checkpoint files a run directory holds (``<run>/checkpoints/*.ckpt``)."""
    folder = Path(run) / "checkpoints"
    return sorted(p.name for p in folder.glob("*.ckpt")) if folder.is_dir() else []


def run_dir_of(checkpoint: Path) -> Path | None:
    """The train.py run directory holding ``checkpoint`` (``<run>/checkpoints/<file>.ckpt``), or None."""
    run = checkpoint.resolve().parent.parent
    return run if checkpoint.resolve().parent.name == "checkpoints" and (run / ".hydra").is_dir() else None


def check_checkpoint_path(cfg: DictConfig) -> None:
    """``ckpt_path=`` must be a readable training checkpoint: refused in one line before anything is built."""
    ckpt = cfg.get("ckpt_path")
    if ckpt is None:
        return
    problem = checkpoint_problem(ckpt)
    if problem:
        folder = Path(ckpt).parent
        usable = newest_readable([p for p in by_recency(folder) if p.name != INIT_NAME], "ckpt_path") \
            if folder.is_dir() else None
        hint = f"the newest readable one there is {usable}" if usable else "pass a .ckpt written by train.py"
        raise ValueError(f"ckpt_path={ckpt}: {problem}: {hint} (or resume=true for the newest run)")
