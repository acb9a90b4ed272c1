"""One directory per run, whatever the clock says, and a resumed run's files kept in its own directory.

``conf/hydra/default.yaml`` names run and sweep directories ``${unique_dir:<logs>/<time>}``: the first of
``<time>``, ``<time>_1``, ``<time>_2`` ... that this process could create itself (``mkdir`` without
``exist_ok`` is atomic, so two runs started in the same second get two directories). The choice is
remembered for the process, so resolving the name again gives the same directory; the ranks of a DDP run are
started by Lightning with ``hydra.run.dir`` set to rank 0's directory and share it.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

from omegaconf import OmegaConf

log = logging.getLogger(__name__)

RESOLVER = "unique_dir"
_chosen: dict[str, str] = {}


def unique_dir(base: str) -> str:
    """``base``, or ``base_N`` for the smallest N >= 1 when ``base`` is taken; the directory is created here."""
    if base in _chosen:
        return _chosen[base]
    path = Path(base)
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in range(10_000):
        candidate = path if n == 0 else path.with_name(f"{path.name}_{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        _chosen[base] = str(candidate)
        return str(candidate)
    raise RuntimeError(f"10000 run directories named {path.name}_N already exist in {path.parent}")


def register_resolvers() -> None:
    """Make ``${unique_dir:...}`` available to the configs (called by the entry points before Hydra composes)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, unique_dir, use_cache=True)


def file_handlers() -> list[tuple[logging.Logger, logging.FileHandler]]:
    """Every logger's file handler (Hydra's ``<run dir>/<job>.log``), with its logger."""
    loggers = [logging.getLogger()] + [lg for lg in logging.root.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    return [(lg, h) for lg in loggers for h in lg.handlers if isinstance(h, logging.FileHandler)]


def move_into_run(stub: Path, run: Path) -> None:
    """A resumed run continues in ``run``: the log files opened in ``stub`` (the directory Hydra made for this
    start) continue, appended, in ``run``; the start's config goes to ``run/.hydra/resumed/<stub name>``; the stub
    directory is removed when nothing else was written to it."""
    stub, run = stub.resolve(), run.resolve()
    if stub == run or not stub.is_dir():
        return
    for logger, handler in file_handlers():
        old = Path(handler.baseFilename)
        if not old.resolve().is_relative_to(stub):
            continue
        target = run / old.relative_to(stub)
        logger.removeHandler(handler)
        handler.close()
        with open(target, "a", encoding="utf-8") as out:
            out.write(old.read_text(encoding="utf-8"))
        old.unlink()
        moved = logging.FileHandler(target, mode="a", encoding="utf-8")
        moved.setLevel(handler.level)
        moved.setFormatter(handler.formatter)
        logger.addHandler(moved)
    config = stub / ".hydra"
    if config.is_dir():
        dest = run / ".hydra" / "resumed" / stub.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(config), str(dest))
    if not any(stub.iterdir()):
        stub.rmdir()
    else:
        log.warning("resume: %s also holds %s; left in place", stub, ", ".join(p.name for p in stub.iterdir()))
