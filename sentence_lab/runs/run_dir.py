"""One directory per run, whatever the clock says, and a resumed run's files kept in its own directory.

``conf/hydra/default.yaml`` names run and sweep directories ``${unique_dir:<logs>/<time>}``: the first of
``<time>``, ``<time>_1``, ``<time>_2`` ... that this process could create itself (``mkdir`` without
``exist_ok`` is atomic, so two runs started in the same second get two directories). The choice is
remembered for the process, so resolving the name again gives the same directory; the ranks of a DDP run are
started by Lightning with ``hydra.run.dir`` set to rank 0's directory and share it.
"""
from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from sentence_lab.checkpoints.choice import checkpoints_in, resumable_checkpoint_in, run_dir_of
from sentence_lab.optuna_storage import STUDY_RECORD

log = logging.getLogger(__name__)

DDP_CHILD_JOB = "hydra.job.name=train_ddp_process_"  # how Lightning's launcher starts the other ranks of a run


class RunDirTaken(ValueError):
    """A fresh run was pointed at a directory that holds another run's checkpoints."""

    def __init__(self, run: Path, found: list[str], setting: str) -> None:
        shown = ", ".join(found[:4]) + (" ..." if len(found) > 4 else "")
        super().__init__(f"{setting}={run} already holds a run (checkpoints/{shown}): a new run never writes into it. "
                         f"Resume that run (python train.py resume=true {setting}={run}) or choose another directory "
                         "(leave hydra.run.dir out for a new one under logs/)")


def _settings(overrides: list[str]) -> dict[str, tuple[int, object]]:
    """Each plain ``key=value`` override's position and value, as Hydra parses it (quotes removed); flags and what
    Hydra's grammar does not read are left to Hydra."""
    parser = OverridesParser.create()
    found: dict[str, tuple[int, object]] = {}
    for i, override in enumerate(overrides):
        if override.startswith("-"):
            continue
        try:
            (parsed,) = parser.parse_overrides([override])
        except Exception:  # noqa: BLE001 - Hydra will say what is wrong with it
            continue
        if not parsed.is_delete():
            found[parsed.key_or_group] = (i, parsed.value())
    return found


def _literal_dir(settings: dict[str, tuple[int, object]], key: str) -> tuple[int, Path] | None:
    if key not in settings:
        return None
    index, value = settings[key]
    if not isinstance(value, str) or "${" in value:
        return None  # interpolated: checked in the job (check_run_dir_free)
    return index, Path(value).expanduser().resolve()


def holds_optuna_study(sweep: Path) -> bool:
    """The sweep directory is an Optuna sweep's (its ``study.yaml``): running its command again goes on with its
    study (``sentence_lab.runs.optuna_sweep``), each new trial in a directory of its own."""
    return (sweep / STUDY_RECORD).is_file()


class SharedRunDirMissing(ValueError):
    """The ranks of a run that torchrun started each run ``train.py``: without one ``hydra.run.dir`` each would make
    a directory of its own."""


def claim_run_dir(overrides: list[str], env: Mapping[str, str] = os.environ) -> list[str]:
    """Check an explicit ``hydra.run.dir=<dir>`` (or a multirun's ``hydra.sweep.dir``) before Hydra writes its config
    and log into it: a directory that holds checkpoints is refused (``RunDirTaken``) unless the command resumes it;
    ``resume=true`` (or a ``ckpt_path`` inside it) resumes it, as ``ckpt_path=<its checkpoint>`` does, so this start's
    log and config go beside that run's own instead of over them. Returns the command line to give Hydra. The other
    ranks of a DDP run, started by Lightning into rank 0's directory, pass as they are.

    Under torchrun (``TORCHELASTIC_RUN_ID`` set) every rank runs ``train.py`` itself, on every node: a run of more
    than one rank needs the same ``hydra.run.dir`` on each (``SharedRunDirMissing``, one line, otherwise); each rank
    resumes from the same checkpoint, and a rank beyond 0 works in that directory as the ranks Lightning starts do
    (their job name, no config folder), so its log and config never overwrite rank 0's."""
    if any(o.startswith(DDP_CHILD_JOB) for o in overrides):
        return overrides
    rank = _torchrun_rank(overrides, env)
    claimed = _claim(overrides)
    if not rank:
        return claimed
    run_dir = next(o for o in overrides if o.startswith("hydra.run.dir="))
    return [*(o for o in claimed if not o.startswith("hydra.run.dir=")), run_dir, f"{DDP_CHILD_JOB}{rank}",
            "hydra.output_subdir=null"]


def _torchrun_rank(overrides: list[str], env: Mapping[str, str]) -> int | None:
    """This process's global rank when torchrun started it as one of several ranks of a run (not a sweep)."""
    if "TORCHELASTIC_RUN_ID" not in env or any(o in ("-m", "--multirun") for o in overrides):
        return None
    rank, world = int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1"))
    if world < 2:
        return None
    if not any(o.startswith("hydra.run.dir=") for o in overrides):
        raise SharedRunDirMissing(f"torchrun started rank {rank} of {world}: give every node the same "
                                  "hydra.run.dir=<a directory every node sees>, so that the ranks share one run "
                                  "(and resume=true finds its checkpoints)")
    return rank


def _claim(overrides: list[str]) -> list[str]:
    settings = _settings(overrides)
    if any(o in ("-m", "--multirun") for o in overrides):
        sweep = _literal_dir(settings, "hydra.sweep.dir")
        held = sorted(p.parent.parent.name for p in sweep[1].glob("*/checkpoints/*.ckpt")) if sweep else []
        if sweep and held and not holds_optuna_study(sweep[1]):  # an Optuna study goes on: new trials' dirs
            raise RunDirTaken(sweep[1], [f"{held[0]}/checkpoints/..."], "hydra.sweep.dir")
        return overrides  # each job's directory is checked in the job too (check_run_dir_free)
    given = _literal_dir(settings, "hydra.run.dir")
    if given is None:
        return overrides
    index, run = given
    found = checkpoints_in(run)
    if not found:
        return overrides
    ckpt = settings.get("ckpt_path", (None, None))[1]
    if ckpt:
        if run_dir_of(Path(str(ckpt)).expanduser()) == run:
            return [o for i, o in enumerate(overrides) if i != index]
        raise RunDirTaken(run, found, "hydra.run.dir")
    if settings.get("resume", (None, False))[1] is not True:
        raise RunDirTaken(run, found, "hydra.run.dir")
    resumable = resumable_checkpoint_in(run)
    if resumable is None:
        raise FileNotFoundError(f"resume=true hydra.run.dir={run}: none of its checkpoints ({', '.join(found)}) is "
                                "readable: choose another directory for a new run")
    return [o for i, o in enumerate(overrides) if i != index] + [f"ckpt_path={resumable}"]


def check_run_dir_free(cfg: DictConfig) -> None:
    """A fresh run never writes into a directory holding another run's checkpoints (a sweep's job directory reused,
    a config naming a fixed directory): ``RunDirTaken`` unless ``ckpt_path`` lies in that directory."""
    run = Path(str(cfg.paths.output_dir)).resolve()
    found = checkpoints_in(run)
    ckpt = cfg.get("ckpt_path")
    if found and not (ckpt and Path(str(ckpt)).resolve().parent.parent == run) and not cfg.get("resume"):
        raise RunDirTaken(run, found, "paths.output_dir")

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
