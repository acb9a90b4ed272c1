"""Multirun bookkeeping: a job that fails is recorded and the sweep goes on; the sweep then fails naming it."""
from __future__ import annotations

import json
import logging
import os
import traceback
from pathlib import Path
from typing import Any, Callable

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)

FAILED_JOBS = "failed_jobs.jsonl"


def _append_line(path: Path, line: str) -> None:
    """One JSON line appended in a single write (jobs of a parallel launcher may finish together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def run_job(cfg: DictConfig, task: Callable[[DictConfig], Any]) -> Any:
    """``task(cfg)``; in a multirun, an exception is logged, written to ``<job dir>/error.txt`` and to the sweep's
    ``failed_jobs.jsonl``, and the next job runs. A single run raises as usual."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get() if HydraConfig.initialized() else None
    if hydra_cfg is None or hydra_cfg.mode != RunMode.MULTIRUN:
        return task(cfg)
    try:
        return task(cfg)
    except Exception as err:  # noqa: BLE001 - one job's failure must not stop the sweep
        job_dir = Path(hydra_cfg.runtime.output_dir)
        overrides = list(hydra_cfg.overrides.task)
        log.error("job %s (%s) failed: %s: %s", hydra_cfg.job.num, " ".join(overrides), type(err).__name__, err)
        (job_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        _append_line(Path(hydra_cfg.sweep.dir) / FAILED_JOBS, json.dumps(
            {"job": hydra_cfg.job.num, "overrides": overrides, "error": f"{type(err).__name__}: {err}",
             "dir": str(job_dir)}))
        return None


class FailOnFailedJobs(Callback):
    """At the end of a multirun, exit non-zero naming the jobs that failed (``failed_jobs.jsonl``)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        path = Path(config.hydra.sweep.dir) / FAILED_JOBS
        if not path.is_file():
            return
        failed = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        names = "; ".join(f"#{f['job']} ({' '.join(f['overrides'])}): {f['error']}" for f in failed)
        raise SystemExit(f"{len(failed)} job(s) of the multirun failed (the others finished): {names}. "
                         f"Details: {path} and each job's error.txt")
