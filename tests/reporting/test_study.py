"""The report of an Optuna sweep (sentence_lab.reporting.study), and the study opened in optuna-dashboard."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState

from sentence_lab.optuna_storage import PRUNED_AT, RETRY_OF, open_storage, storage_url, write_study_record
from sentence_lab.reporting.report import build_report
from sentence_lab.reporting.study import study_report
from tests.helpers import processes
from tests.helpers.extras import needs_extra
from tests.reporting.test_report import fake_run

SPACE = {"lr": FloatDistribution(1e-4, 1e-2, log=True), "batch": CategoricalDistribution([100, 200, 400])}


def sweep_study(root: Path, directions: list[str]) -> optuna.Study:
    """A sweep directory's study: trials complete, pruned after epoch 1, interrupted and re-run, failed."""
    url = storage_url(None, root)
    study = optuna.create_study(storage=open_storage(url), study_name="qt_probing", directions=directions,
                                sampler=optuna.samplers.RandomSampler(seed=0))
    write_study_record(root, url, "qt_probing")
    for final in (60.0, 64.0, 62.0, 66.0):
        trial = study.ask(SPACE)
        for epoch, score in enumerate((50.0, final - 2, final)):
            if len(directions) == 1:
                trial.report(score, epoch)
        study.tell(trial, final if len(directions) == 1 else [final, 100 - final])
    if len(directions) == 1:
        pruned = study.ask(SPACE)
        pruned.report(50.0, 0)
        pruned.report(51.0, 1)
        pruned.set_user_attr(PRUNED_AT, 1)
        study.tell(pruned, state=TrialState.PRUNED)
    interrupted = study.tell(study.ask(SPACE), state=TrialState.FAIL)
    study.enqueue_trial(interrupted.params, user_attrs={RETRY_OF: interrupted.number})
    study.tell(study.ask(SPACE), state=TrialState.FAIL)
    return study


def test_the_report_lists_every_trial_with_its_state_and_draws_the_pruners_work(tmp_path):
    study = sweep_study(tmp_path, ["maximize"])
    fake_run(tmp_path, "0", {0: {"Length": 50.0}, 1: {"Length": 60.0}})
    build_report(tmp_path)
    text = (tmp_path / "study.md").read_text()
    assert "7 trial(s): 4 complete, 1 pruned, 2 fail" in text
    assert f"Best: trial 3, value 66, with `lr={study.trials[3].params['lr']}`" in text
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| pruned | 51 | 1 | 50 | 51 |" in rows["4"]  # its value is its last report
    assert "interrupted; re-run as trial 6" in rows["5"] and "re-run of trial 5" in rows["6"]
    assert "Parameter importance (Optuna's default evaluator" in text
    for figure in ("optuna_history.png", "optuna_curves.png", "optuna_importances.png"):
        assert (tmp_path / figure).stat().st_size > 5000
    assert "## Optuna study `qt_probing`" in (tmp_path / "report.md").read_text()


def test_two_objectives_give_the_pareto_front_and_its_figure(tmp_path):
    sweep_study(tmp_path, ["maximize", "maximize"])
    text = study_report(tmp_path)
    assert "Pareto front: trial(s) 0, 1, 2, 3." in text  # (60, 40) ... (66, 34): none dominates another
    assert (tmp_path / "pareto_front.png").stat().st_size > 5000


def test_a_directory_without_a_study_has_no_study_section(tmp_path):
    assert study_report(tmp_path) is None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@needs_extra("sweeps-dashboard")
@pytest.mark.slow
def test_optuna_dashboard_serves_the_sweeps_study_offline(tmp_path):
    study = sweep_study(tmp_path, ["maximize"])
    command = shutil.which("optuna-dashboard", path=os.path.dirname(sys.executable)) or "optuna-dashboard"
    port = free_port()
    server = processes.start([command, storage_url(None, tmp_path), "--host", "127.0.0.1", "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        studies = get_json(f"http://127.0.0.1:{port}/api/studies")["study_summaries"]
        (listed,) = studies
        assert listed["study_name"] == "qt_probing"
        detail = get_json(f"http://127.0.0.1:{port}/api/studies/{listed['study_id']}?after=0")
        states = [t["state"] for t in detail["trials"]]
        assert len(states) == len(study.trials) == 7
        assert states.count("Pruned") == 1 and states.count("Complete") == 4 and states.count("Fail") == 2
        pruned = next(t for t in detail["trials"] if t["state"] == "Pruned")
        assert [v["value"] for v in pruned["intermediate_values"]] == [50.0, 51.0]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_report_reads_a_journal_storage_too(tmp_path):
    url = f"journal:{tmp_path / 'study.log'}"
    study = optuna.create_study(storage=open_storage(url), study_name="s")
    write_study_record(tmp_path, url, "s")
    study.tell(study.ask(SPACE), 1.0)
    assert "1 trial(s): 1 complete" in study_report(tmp_path)


def test_a_study_outside_the_sweep_folder_is_read_only_from_the_address_the_user_passes(tmp_path, caplog):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    url = f"journal:{tmp_path / 'shared' / 'study.log'}"
    study = optuna.create_study(storage=open_storage(url), study_name="s")
    write_study_record(sweep, url, "s")
    study.tell(study.ask(SPACE), 1.0)
    assert study_report(sweep) is None
    assert "pass --storage" in caplog.text
    assert "1 trial(s): 1 complete" in study_report(sweep, storage=url)


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_a_received_sweep_folders_study_record_opens_nothing_outside_it(tmp_path):
    """study.yaml naming a database or journal elsewhere, or a network address: nothing created, nothing opened."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    elsewhere = tmp_path / "elsewhere"
    for url in (f"sqlite:///{elsewhere / 'deep' / 'made.db'}", f"journal:{elsewhere / 'deep' / 'made.log'}",
                "postgresql://attacker.invalid:5432/db", f"sqlite:///{sweep / '..' / 'elsewhere' / 'made.db'}"):
        write_study_record(sweep, url, "s")
        assert study_report(sweep) is None, url
        assert not elsewhere.exists(), url
        assert sorted(p.name for p in sweep.iterdir()) == ["study.yaml"], url


def test_the_study_file_in_the_folder_is_opened_read_only(tmp_path):
    sweep_study(tmp_path, ["maximize"])
    before = _files(tmp_path)
    with_tables = study_report(tmp_path)
    assert with_tables and "qt_probing" in with_tables
    after = {k: v for k, v in _files(tmp_path).items() if not k.endswith((".png", ".md"))}
    assert after == before  # optuna.db untouched: no table, journal or lock file made beside it


def test_an_empty_database_in_the_folder_gets_no_tables(tmp_path):
    (tmp_path / "optuna.db").write_bytes(b"")
    write_study_record(tmp_path, storage_url(None, tmp_path), "s")
    assert study_report(tmp_path) is None
    assert (tmp_path / "optuna.db").read_bytes() == b""
