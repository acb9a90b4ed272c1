"""sentence_lab.optuna_storage: sweeps that open one new database at the same moment all get it."""
from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import optuna
import pytest
from sqlalchemy.exc import OperationalError

from sentence_lab.optuna_storage import open_storage

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
