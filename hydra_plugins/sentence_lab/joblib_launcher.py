"""``hydra/launcher=joblib`` (conf/hydra/launcher/joblib.yaml): Hydra's joblib launcher, with the jobs whose worker
died without a word (SIGKILL from the out-of-memory killer, a crash in native code) recorded like any failed job.

Joblib ends the whole ``Parallel`` call with ``TerminatedWorkerError`` when a worker dies, once the jobs running
elsewhere finish. Here each job of the batch that started and never ended (``jobs.jsonl``) is written to
``failed_jobs.jsonl`` as killed, each that never started as not run, and the sweep's last line names them. Defined
only where the optional ``sweeps`` extra (hydra-joblib-launcher) is installed."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra.core.utils import JobReturn

from sentence_lab.runs.errors import one_line
from sentence_lab.runs.sweeps import failed_jobs_message, record_lost_jobs

try:  # the optional sweeps extra; Hydra imports every hydra_plugins module at start-up, so its absence is no error
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
except ImportError:
    JoblibLauncher = None

if JoblibLauncher is not None:

    class RecordingJoblibLauncher(JoblibLauncher):
        """``JoblibLauncher`` whose jobs never vanish: a dead worker's job is recorded and the sweep fails naming it."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            try:
                return super().launch(job_overrides, initial_job_idx)
            except TerminatedWorkerError as err:
                sweep = Path(str(self.config.hydra.sweep.dir))
                record_lost_jobs(sweep, initial_job_idx, job_overrides, one_line(err))
                raise SystemExit(failed_jobs_message(sweep)) from None
