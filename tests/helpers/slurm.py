"""The one-node SLURM cluster ``scripts/services.sh start`` runs on this host, for the tests marked ``cluster``: whether
it answers (else the test skips saying what it needs), the state SLURM's accounting holds for a job, and the ending of
every job a test submitted (SLURM's jobs are no children of the test: the process-group cleanup cannot reach them)."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.extras import missing_extra

PARTITION = "local"  # services.sh's


def slurm_problem() -> str | None:
    """Why sweeps cannot be sent to SLURM here (no submitit launcher, no SLURM commands, no controller or idle
    node), or None."""
    missing = missing_extra("sweeps-slurm")
    if missing:
        return missing
    needs = "needs the SLURM cluster of scripts/services.sh (as root: bash scripts/services.sh start)"
    if shutil.which("sbatch") is None:
        return f"{needs}: sbatch is not installed"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10)
        nodes = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%T"], capture_output=True, text=True,
                               timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{needs}: {err}"
    if ping.returncode != 0 or "UP" not in ping.stdout:
        return f"{needs}: slurmctld does not answer ({(ping.stdout + ping.stderr).strip()})"
    if not any(state.rstrip("*") in ("idle", "mixed", "allocated", "completing") for state in nodes.stdout.split()):
        return f"{needs}: partition {PARTITION} has no node up ({nodes.stdout.strip() or nodes.stderr.strip()})"
    return None


def slurm_partition() -> str:
    """The local cluster's partition, or the calling test skips saying what it needs."""
    problem = slurm_problem()
    if problem:
        pytest.skip(problem)
    return PARTITION


def launcher_overrides(partition: str, *extra: str) -> list[str]:
    """``hydra/launcher=slurm`` sized for the one-node cluster: one core and 2 GB a job, no GPU."""
    return ["hydra/launcher=slurm", f"hydra.launcher.partition={partition}", "hydra.launcher.cpus_per_task=1",
            "hydra.launcher.gpus_per_node=0", "hydra.launcher.mem_gb=2", *extra]


def accounted_states(job_ids: list[str]) -> dict[str, str]:
    """Each job's state as SLURM's accounting (``sacct``) holds it, by id (``<array>_<task>`` for a sweep's):
    ``COMPLETED``, ``CANCELLED``, ..."""
    done = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(job_ids)],
                          capture_output=True, text=True, timeout=30, check=True)
    return dict(line.split("|")[:2] for line in done.stdout.splitlines() if "|" in line)


def final_states(job_ids: list[str], timeout: float = 60) -> dict[str, str]:
    """``accounted_states`` once every job has ended there (a job's result is written before SLURM ends it)."""
    ending = ("PENDING", "RUNNING", "COMPLETING", "REQUEUED", "CONFIGURING")
    wait_until(lambda: not any(state in ending for state in accounted_states(job_ids).values()), timeout,
               f"SLURM to end job(s) {', '.join(job_ids)}", poll=0.5)
    return accounted_states(job_ids)


def submitted_job_ids(sweep: Path) -> list[str]:
    """The SLURM job ids of a sweep's jobs, read from submitit's folders (``.submitit/<job id>``)."""
    folder = sweep / ".submitit"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def cancel_jobs_of(sweep: Path) -> None:
    """``scancel`` every job the sweep submitted (a test that failed or timed out leaves none queued)."""
    ids = {job.split("_")[0] for job in submitted_job_ids(sweep)}
    if ids:
        subprocess.run(["scancel", *sorted(ids)], capture_output=True, timeout=30)


def job_events(sweep: Path) -> list[dict]:
    """Every line of the sweep's ``jobs.jsonl`` in order (a requeued job starts more than once)."""
    path = sweep / "jobs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [json.loads(line) for line in lines if line.strip()]


def wait_until(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.25) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f}s for {what}"
        time.sleep(poll)
