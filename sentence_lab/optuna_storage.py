"""Where an Optuna sweep's study lives, opened the same way by the sweep, its trials and the report.

``storage`` is a SQLAlchemy URL (``sqlite:///<file>``, the default in the sweep directory; ``postgresql://...``)
or ``journal:<file>``, Optuna's journal file, whose lock is safe on a network filesystem. The sweep writes
``study.yaml`` (this storage and the study's name) into its directory, so that ``report.py`` finds the study."""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import optuna
import yaml
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

STUDY_FILE = "optuna.db"  # the default storage, in the sweep directory
STUDY_RECORD = "study.yaml"  # the sweep directory's note of its storage and study name
JOURNAL_PREFIX = "journal:"
PRUNED_AT = "pruned_at_epoch"  # the trial attribute a pruned run sets (sentence_lab.runs.trial_pruning)
RETRY_OF = "retry_of"  # the attribute of a trial that re-runs an interrupted one: that trial's number
ATTEMPT = "attempt"  # and which run of those parameters it is (2, 3)
CREATE_ATTEMPTS = 5  # opening a database another sweep is creating at the same moment (open_storage)


def storage_url(storage: str | None, sweep_dir: Path) -> str:
    """The storage the study lives in: as given, else the SQLite file ``optuna.db`` in the sweep directory."""
    return str(storage) if storage else f"sqlite:///{(Path(sweep_dir) / STUDY_FILE).resolve()}"


def open_storage(url: str, heartbeat_interval: int | None = None, grace_period: int | None = None,
                 on_stale: Callable[[optuna.Study, FrozenTrial], None] | None = None) -> BaseStorage:
    """``journal:<file>`` -> Optuna's journal file; anything else a SQLAlchemy URL, with heartbeats when
    ``heartbeat_interval`` is set (Optuna's RDB storages only; ``on_stale`` is called for each trial whose heartbeat
    stopped)."""
    if url.startswith(JOURNAL_PREFIX):
        path = Path(url[len(JOURNAL_PREFIX):]).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    open_rdb = partial(RDBStorage, url, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
                       heartbeat_stale_trial_callback=on_stale,
                       engine_kwargs={"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None)
    with warnings.catch_warnings():  # heartbeats are "experimental" since Optuna 2.9 (docs/sweeps.md)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for attempt in range(1, CREATE_ATTEMPTS):
            try:
                return open_rdb()
            except (IntegrityError, OperationalError, ProgrammingError):
                # Two sweeps creating one new database at once both create its tables and stamp its schema
                # version; the second fails ("UNIQUE constraint failed: alembic_version", "table ... already
                # exists"). Opened again, the database is there and stamped. Any other cause fails the last try.
                time.sleep(0.2 * attempt)
        return open_rdb()


def write_study_record(sweep_dir: Path, url: str, study_name: str) -> None:
    (Path(sweep_dir) / STUDY_RECORD).write_text(yaml.safe_dump({"storage": url, "study_name": study_name}),
                                                encoding="utf-8")


def load_recorded_study(sweep_dir: Path) -> optuna.Study | None:
    """The study a sweep directory's ``study.yaml`` names, or None when the directory is not an Optuna sweep's."""
    record = Path(sweep_dir) / STUDY_RECORD
    if not record.is_file():
        return None
    doc = yaml.safe_load(record.read_text(encoding="utf-8"))
    return optuna.load_study(study_name=doc["study_name"], storage=open_storage(doc["storage"]))
