"""Where an Optuna sweep's study lives, opened the same way by the sweep, its trials and the report.

``storage`` is a SQLAlchemy URL (``sqlite:///<file>``, the default in the sweep directory; ``postgresql://...``)
or ``journal:<file>``, Optuna's journal file, whose lock is safe on a network filesystem. The sweep writes
``study.yaml`` (this storage and the study's name) into its directory, so that ``report.py`` finds the study: there
it is read only from a file inside the sweep directory, found by name and opened read-only; any other address only
when the user passes it (``report.py --storage``)."""
from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path, PurePath

import optuna
import yaml
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

STUDY_FILE = "optuna.db"  # the default storage, in the sweep directory
STUDY_RECORD = "study.yaml"  # the sweep directory's note of its storage and study name
JOURNAL_PREFIX = "journal:"
PRUNED_AT = "pruned_at_epoch"  # the trial attribute a pruned run sets (sentence_lab.runs.trial_pruning)
RETRY_OF = "retry_of"  # the attribute of a trial that re-runs an interrupted one: that trial's number
ATTEMPT = "attempt"  # and which run of those parameters it is (2, 3)
INTERRUPTED_BY = "interrupted_by"  # the stop signal that cut a failed trial (run again under RETRY_OF)
CREATE_ATTEMPTS = 5  # opening a database another sweep is creating at the same moment (open_storage)
CONNECT_TIMEOUT_S = 10  # a database server that does not answer fails the sweep after this, not after TCP's minutes
SERVER_DIALECTS = ("postgresql", "mysql", "mariadb")  # SQLAlchemy URLs of a database server: a connect timeout


class StorageUnavailable(ValueError):
    """The study's database server cannot be reached or opened (not answering, refusing, a wrong password, no such
    database): one line naming it, its password hidden, and the driver's own reason."""

    def __init__(self, url: str, cause: BaseException) -> None:
        reason = str(getattr(cause, "orig", None) or cause).strip().splitlines()
        super().__init__(f"the sweep's study storage {shown_url(url)} cannot be opened: "
                         f"{reason[0] if reason else type(cause).__name__}. Check its host, port, user, password "
                         "and database (the local server: sudo bash scripts/services.sh start)")


def shown_url(url: str) -> str:
    """``url`` with its password hidden (``***``), for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def server_connect_args(url: str) -> dict[str, object] | None:
    """The engine's connection arguments: a connect timeout for a database server (unless the URL sets one), SQLite's
    lock timeout for a file; None otherwise."""
    if url.startswith("sqlite"):
        return {"timeout": 60}
    if url.startswith(SERVER_DIALECTS) and "connect_timeout" not in url:
        return {"connect_timeout": CONNECT_TIMEOUT_S}
    return None

log = logging.getLogger(__name__)


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
    connect_args = server_connect_args(url)
    open_rdb = partial(RDBStorage, url, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
                       heartbeat_stale_trial_callback=on_stale,
                       engine_kwargs={"connect_args": connect_args} if connect_args else None)
    with warnings.catch_warnings():  # heartbeats are "experimental" since Optuna 2.9 (docs/sweeps.md)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for attempt in range(1, CREATE_ATTEMPTS):
            try:
                return open_rdb()
            except OperationalError as err:
                if url.startswith(SERVER_DIALECTS) and _no_connection(err):
                    raise StorageUnavailable(url, err) from None  # the server itself said no (or nothing)
                time.sleep(0.2 * attempt)
            except (IntegrityError, ProgrammingError):
                # Two sweeps creating one new database at once both create its tables and stamp its schema
                # version; the second fails ("UNIQUE constraint failed: alembic_version", "table ... already
                # exists"). Opened again, the database is there and stamped. Any other cause fails the last try.
                time.sleep(0.2 * attempt)
        try:
            return open_rdb()
        except OperationalError as err:
            if url.startswith(SERVER_DIALECTS):
                raise StorageUnavailable(url, err) from None
            raise


def _no_connection(err: OperationalError) -> bool:
    """The driver could not open a connection at all (refused, timed out, authentication, no such database): trying
    again changes nothing, unlike two sweeps creating one database's tables at once."""
    said = str(err.orig or err).lower()
    return any(s in said for s in ("connection", "timeout", "timed out", "password", "authentication",
                                   "does not exist", "unknown database", "access denied"))


def write_study_record(sweep_dir: Path, url: str, study_name: str) -> None:
    (Path(sweep_dir) / STUDY_RECORD).write_text(yaml.safe_dump({"storage": url, "study_name": study_name}),
                                                encoding="utf-8")


def recorded_study_file(sweep_dir: Path, url: str) -> Path | None:
    """The file inside ``sweep_dir`` that holds a recorded storage (``sqlite:///<...>/optuna.db`` or
    ``journal:<...>/<file>``), found by its name there; None for any other address or when the folder has no
    such file (a sweep folder's recorded address is never followed elsewhere)."""
    if url.startswith("sqlite:///"):
        name = PurePath(url[len("sqlite:///"):].split("?", 1)[0]).name
    elif url.startswith(JOURNAL_PREFIX):
        name = PurePath(url[len(JOURNAL_PREFIX):]).name
    else:
        return None
    folder = Path(sweep_dir).resolve()
    candidate = folder / name
    inside = candidate.is_file() and candidate.resolve().parent == folder
    return candidate if name and inside else None


def open_study_file(path: Path) -> BaseStorage:
    """A sweep folder's study file, opened to read: a SQLite database read-only (no table, folder or file is
    created), a journal file as it is."""
    with open(path, "rb") as f:
        header = f.read(16)
    if header == b"SQLite format 3\x00":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return RDBStorage(f"sqlite:///file:{path}?mode=ro&uri=true", skip_table_creation=True)
    return JournalStorage(JournalFileBackend(str(path)))


def load_recorded_study(sweep_dir: Path, storage: str | None = None) -> optuna.Study | None:
    """The study a sweep directory's ``study.yaml`` names, read from the study file inside that directory (found by
    name); ``storage``, an address the user gives, is opened instead. None when the directory is not an Optuna
    sweep's, or its study cannot be read (a warning says why and what to pass)."""
    record = Path(sweep_dir) / STUDY_RECORD
    doc = yaml.safe_load(record.read_text(encoding="utf-8")) if record.is_file() else None
    if storage is None and not isinstance(doc, dict):
        return None
    doc = doc if isinstance(doc, dict) else {}
    name = doc.get("study_name")
    if storage is not None:
        opened = open_storage(storage)
    else:
        url = str(doc.get("storage", ""))
        found = recorded_study_file(Path(sweep_dir), url)
        if found is None:
            log.warning("%s: the study lives in %s, not in a file of this folder: pass --storage <address> to read it "
                        "from there", record, url)
            return None
        opened = open_study_file(found)
    try:
        if name is None:  # an address given by hand without a record: its one study
            names = [s.study_name for s in optuna.get_all_study_summaries(opened)]
            if len(names) != 1:
                log.warning("%s holds %d studies (%s): the sweep's study.yaml names which", storage, len(names),
                            ", ".join(names))
                return None
            name = names[0]
        return optuna.load_study(study_name=str(name), storage=opened)
    except (KeyError, ValueError, SQLAlchemyError) as err:
        log.warning("the study %s could not be read (%s): the report has no study section", name, err)
        return None
