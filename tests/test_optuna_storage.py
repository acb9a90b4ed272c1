"""sentence_lab.optuna_storage: sweeps that open one new database at the same moment all get it."""
from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from sqlalchemy.exc import OperationalError

from sentence_lab.optuna_storage import (
    CONNECT_TIMEOUT_S,
    StorageUnavailable,
    open_storage,
    server_connect_args,
    shown_url,
)
from tests.helpers import processes
from tests.helpers.extras import needs_extra
from tests.helpers.services import postgresql_url
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[1]

OPENERS = 4


def _open_at_once(url: str, barrier, results) -> None:
    barrier.wait()
    try:
        open_storage(url)
        results.put("ok")
    except Exception as err:  # noqa: BLE001 - the test reports what failed
        results.put(f"{type(err).__name__}: {str(err).splitlines()[0]}")


@pytest.mark.slow  # processes started at once: over a second
def test_sweeps_opening_one_new_database_at_once_all_get_it(tmp_path):
    """Optuna's RDB storage creates a new database's tables and stamps its schema version on first open; two
    processes doing it at once made one fail (``UNIQUE constraint failed: alembic_version.version_num``, ``table
    version_info already exists``: 5 of 40 openers in 10 rounds before the fix)."""
    ctx = mp.get_context("fork")
    outcomes = []
    for round_ in range(10):
        url = f"sqlite:///{tmp_path / str(round_) / 'optuna.db'}"
        barrier, results = ctx.Barrier(OPENERS), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(url, barrier, results)) for _ in range(OPENERS)]
        for proc in procs:
            proc.start()
        outcomes += [results.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(timeout=120)
        study = optuna.create_study(study_name="s", storage=open_storage(url))
        study.add_trial(optuna.trial.create_trial(value=1.0))
        assert len(optuna.load_study(study_name="s", storage=url).trials) == 1
    assert [o for o in outcomes if o != "ok"] == []


@pytest.mark.slow
def test_a_database_that_cannot_be_opened_still_fails(tmp_path):
    folder = tmp_path / "a folder, not a file"
    folder.mkdir()
    with pytest.raises(OperationalError, match="unable to open database file"):
        open_storage(f"sqlite:///{Path(folder)}")


def test_a_urls_password_is_hidden_and_a_server_gets_a_connect_timeout():
    assert shown_url("postgresql://sweeps:secret@127.0.0.1:15432/sweeps") == \
        "postgresql://sweeps:***@127.0.0.1:15432/sweeps"
    assert server_connect_args("postgresql://u:p@127.0.0.1/db") == {"connect_timeout": CONNECT_TIMEOUT_S}
    assert server_connect_args("postgresql://u:p@127.0.0.1/db?connect_timeout=2") is None  # the URL's own wins
    assert server_connect_args("sqlite:///x.db") == {"timeout": 60}


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that takes connections and never answers (a server that hangs, a host behind a firewall
    that drops packets: the client waits)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


@needs_extra("sweeps-postgresql")
def test_a_database_server_that_does_not_answer_fails_in_one_line_after_the_connect_timeout(silent_server):
    url = f"postgresql://sweeps:secret@127.0.0.1:{silent_server}/sweeps?connect_timeout=2"
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as caught:
        open_storage(url)
    assert time.monotonic() - started < 15  # its timeout, once: not TCP's minutes, not five attempts of it
    message = str(caught.value)
    assert "\n" not in message and "secret" not in message and "sweeps:***@" in message and "timeout" in message


@pytest.mark.cluster
@pytest.mark.parametrize("wrong, reason", [("password", "password authentication failed"),
                                           ("database", "does not exist")])
def test_a_refusing_database_server_fails_in_one_line_at_once(wrong, reason):
    base, database = postgresql_url().rsplit("/", 1)
    url = base.replace(":sweeps@", ":wrong@") + f"/{database}" if wrong == "password" else f"{base}/no_such_database"
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match=reason) as caught:
        open_storage(url)
    assert time.monotonic() - started < 5  # the server's answer, not retried
    assert "\n" not in str(caught.value) and "wrong" not in str(caught.value)


@needs_extra("sweeps-postgresql")
def test_a_sweep_on_a_storage_that_does_not_answer_ends_in_one_line_before_any_job(silent_server, tiny_corpus,
                                                                                  senteval_root, tmp_path):
    url = f"postgresql://sweeps:secret@127.0.0.1:{silent_server}/sweeps?connect_timeout=2"
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length]", "hparams_search=qt_optuna", "encoder=bow",
                        f"hydra.sweeper.storage='{url}'", "hydra.sweeper.n_trials=1")
    done = processes.run(cmd, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                         text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the sweep's study storage postgresql://sweeps:***@127.0.0.1:") and "timeout" in last
    assert not (tmp_path / "sweep" / "jobs.jsonl").exists()  # no job started
