"""``hydra/launcher=slurm`` (conf/hydra/launcher/slurm.yaml): hydra-submitit-launcher's SLURM launcher, one array job
of ``sbatch`` per batch of sweep points, with what a shared cluster needs on top:

- **Submission refused, one line.** A partition that does not exist or resources that no node has: SLURM refuses the
  whole array at ``sbatch`` and nothing is submitted; the sweep ends with one line quoting SLURM's reason
  (``SlurmSubmissionRefused``), not submitit's traceback.
- **A job that ends without a word** (SIGKILL from the out-of-memory killer, a node lost) is recorded in
  ``failed_jobs.jsonl`` with SLURM's end state, and the sweep ends naming it (an Optuna sweep queues its trial again:
  the same command runs it).
- **A job SLURM ends early comes back and finishes.** One mechanism, submitit's: the job asks for ``--signal=USR2@<
  signal_delay_s>`` before its time limit (and a pre-emption sends it, or SIGTERM). The run turns the signal into a stop
  (``sentence_lab.stop_signals``): its ``interrupted.ckpt`` is written, the job is recorded as interrupted; then
  submitit's own handler requeues the job (``scontrol requeue``), counting time limits against ``max_num_timeout``.
  A job SLURM starts again (``SLURM_RESTART_COUNT`` > 0, whoever requeued it) runs with ``resume=true``: it continues
  from its own directory's newest checkpoint, and its earlier interruption moves from ``failed_jobs.jsonl`` to
  ``interrupted_jobs.jsonl``. Lightning's own SLURM requeue (SIGUSR1) is turned off in such jobs
  (``sentence_lab.runs.cluster_environment``), so one signal means one thing.

Defined only where the optional ``sweeps`` extra (hydra-submitit-launcher) is installed."""
from __future__ import annotations

import logging
import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides
from omegaconf import OmegaConf

from sentence_lab.runs.errors import one_line
from sentence_lab.runs.optuna_sweep import stopping_signal
from sentence_lab.runs.sweeps import (
    failed_jobs_message,
    job_events,
    record_failed_job,
    restarted_by_slurm,
    set_aside_failures,
)

try:  # the optional sweeps extra; Hydra imports every hydra_plugins module at start-up, so its absence is no error
    import submitit
    from submitit.core.utils import FailedJobError, UncompletedJobError

    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
except ImportError:
    SlurmLauncher = None

log = logging.getLogger(__name__)

REQUEUE_SIGNAL = signal.SIGUSR2  # submitit's (sbatch --signal=USR2@<signal_delay_s>)
INIT_KEYS = ("submitit_folder", "max_num_timeout")  # the executor's own settings; the rest are the jobs' resources


class SlurmSubmissionRefused(SystemExit):
    """``sbatch`` refused the sweep's jobs: nothing was submitted. One line quoting SLURM, exit code 1."""

    def __init__(self, reason: str) -> None:
        said = " ".join(line.strip() for line in reason.strip().splitlines() if line.strip())
        super().__init__(f"error: SLURM refused the sweep's jobs, nothing was submitted: {said}. Check "
                         "hydra.launcher.partition (sinfo lists the partitions) and the resources asked for "
                         "(hydra.launcher.cpus_per_task, mem_gb, gpus_per_node, nodes, timeout_min)")


def resuming(overrides: Sequence[str]) -> list[str]:
    """A restarted job's overrides: ``resume=true`` added (its own directory's newest checkpoint; none: a new start)."""
    kept = [o for o in overrides if not o.startswith(("resume=", "+resume="))]
    return [*kept, "resume=true"]


if SlurmLauncher is not None:

    class RequeueingSlurmLauncher(SlurmLauncher):
        """``SlurmLauncher`` whose refused submissions are one line and whose requeued jobs resume (module doc)."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            assert self.config is not None, "Hydra calls setup() first"
            init = {k: v for k, v in self.params.items() if k in INIT_KEYS}
            executor = submitit.AutoExecutor(cluster="slurm", folder=init["submitit_folder"],
                                             slurm_max_num_timeout=init.get("max_num_timeout", 0))
            shared = set(OmegaConf.structured(BaseQueueConf).keys())
            executor.update_parameters(**{k if k in shared else f"slurm_{k}": v for k, v in self.params.items()
                                          if k not in INIT_KEYS})
            sweep = Path(str(self.config.hydra.sweep.dir))
            sweep.mkdir(parents=True, exist_ok=True)
            log.info("SLURM sweep of %d job(s) in %s", len(job_overrides), sweep)
            calls = []
            for number, overrides in enumerate(job_overrides, start=initial_job_idx):
                log.info("\t#%d : %s", number, " ".join(filter_overrides(overrides)))
                calls.append((list(overrides), "hydra.sweep.dir", number, f"job_id_for_{number}",
                              Singleton.get_state()))
            try:
                jobs = executor.map_array(self, *zip(*calls))
            except FailedJobError as err:  # sbatch said no: nothing of the array was queued
                raise SlurmSubmissionRefused(str(err)) from None
            log.info("submitted: SLURM job(s) %s", ", ".join(job.job_id for job in jobs))
            returns = []
            for number, job in enumerate(jobs, start=initial_job_idx):
                try:
                    returns.append(job.results()[0])
                except (FailedJobError, UncompletedJobError) as err:
                    self._ended_early(sweep, number, job, job_overrides[number - initial_job_idx], err, jobs)
            return returns

        def _ended_early(self, sweep: Path, number: int, job: Any, overrides: Sequence[str], err: Exception,
                         jobs: Sequence[Any]) -> None:
            """A job that gave no result: stopped by a signal and not requeued (the sweep exits 128 + N), ended
            without a word (recorded with SLURM's end state, the sweep fails naming it), or failed otherwise (raised
            as submitit raised it)."""
            stopped_by = stopping_signal(err)  # the run's own line, which submitit quotes from its stderr
            if stopped_by is None and isinstance(err, UncompletedJobError):  # ended without a word
                started = job_events(sweep).get(number, {}).get("started")
                record_failed_job(sweep, number, list(overrides),
                                  f"SLURM job {job.job_id} ended as {job.state} without a word (SIGKILL: the "
                                  "out-of-memory killer, a node lost)", Path(started["dir"]) if started else None)
                raise SystemExit(failed_jobs_message(sweep)) from None
            if stopped_by is None:
                raise err
            still = [j.job_id for j in jobs if not j.done()]
            said = re.search(r"error: (stopped by [^\n]*)", str(err))
            log.error("SLURM job %s (#%d) was stopped by %s and not requeued (scancel, or its time limit past "
                      "hydra.launcher.max_num_timeout): recorded as interrupted, its checkpoints kept; the sweep "
                      "stops%s. The run said: %s", job.job_id, number, stopped_by,
                      f" (job(s) {', '.join(still)} still run on SLURM)" if still else "",
                      said.group(1) if said else one_line(err))
            raise SystemExit(128 + signal.Signals[stopped_by]) from None

        def __call__(self, sweep_overrides: list[str], job_dir_key: str, job_num: int, job_id: str,
                     singleton_state: dict[Any, Any]) -> JobReturn:
            """In the job: the sweep point, resumed when SLURM has started it again; a run stopped by the requeue
            signal has written its checkpoint when submitit's handler requeues the job (or, past
            ``max_num_timeout``, ends it as not requeued)."""
            requeue = signal.getsignal(REQUEUE_SIGNAL)  # submitit's: pickle this call again, scontrol requeue
            overrides = list(sweep_overrides)
            restarts = restarted_by_slurm()
            if restarts:
                overrides = resuming(overrides)
                assert self.config is not None, "the pickled launcher holds its config"
                moved = set_aside_failures(Path(str(self.config.hydra.sweep.dir)), {job_num})
                log.info("SLURM started job #%d again (restart %d): resuming its run%s", job_num, restarts,
                         "; its interruption moved to interrupted_jobs.jsonl" if moved else "")
            try:
                return super().__call__(overrides, job_dir_key, job_num, job_id, singleton_state)
            except SystemExit as end:
                if end.code == 128 + REQUEUE_SIGNAL and callable(requeue):
                    try:
                        requeue(REQUEUE_SIGNAL, None)  # requeues the job and exits
                    except UncompletedJobError as refused:  # past max_num_timeout: the job ends, interrupted
                        raise UncompletedJobError(f"error: stopped by {REQUEUE_SIGNAL.name}, not requeued: "
                                                  f"{refused}") from None
                raise
