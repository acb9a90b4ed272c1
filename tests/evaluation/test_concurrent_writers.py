"""Two writers of one results file at once lose nothing: evaluate.py runs side by side, interleaved writers, and a
sweep's failed_jobs.jsonl appended to by several processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentence_lab.evaluation.results import ResultsWriter
from sentence_lab.runs.sweeps import FAILED_JOBS
from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[2]
META = {"protocol": {"name": "p"}, "encoder": {"name": "e"}, "probing_source": "auto"}


def test_interleaved_writers_of_one_file_keep_each_others_tasks(tmp_path):
    path = tmp_path / "results.json"
    a, b = ResultsWriter(path, META, merge_with_file=True), ResultsWriter(path, META, merge_with_file=True)
    a.claim(["MR", "CR"])
    b.claim(["SUBJ", "MPQA"])
    a.add_result("MR", {"main_score": 1.0})
    b.add_result("SUBJ", {"main_score": 3.0})
    a.add_result("CR", {"main_score": 2.0})
    b.add_error("MPQA", "boom")
    doc = json.loads(path.read_text())
    assert {k: v["main_score"] for k, v in doc["results"].items()} == {"MR": 1.0, "CR": 2.0, "SUBJ": 3.0}
    assert doc["errors"] == {"MPQA": "boom"}
    assert "SUBJ" in path.with_suffix(".md").read_text() and "MR" in path.with_suffix(".md").read_text()


def test_a_claimed_task_is_replaced_and_another_encoders_file_is_not_merged(tmp_path):
    path = tmp_path / "results.json"
    old = ResultsWriter(path, META)
    old.add_result("MR", {"main_score": 1.0})
    old.add_result("CR", {"main_score": 2.0})
    rerun = ResultsWriter(path, META, merge_with_file=True)
    rerun.claim(["MR"])
    rerun.add_result("MR", {"main_score": 5.0})
    assert {k: v["main_score"] for k, v in json.loads(path.read_text())["results"].items()} == {"MR": 5.0, "CR": 2.0}
    other = ResultsWriter(path, {**META, "encoder": {"name": "another"}}, merge_with_file=True)
    other.add_result("SUBJ", {"main_score": 3.0})
    assert set(json.loads(path.read_text())["results"]) == {"SUBJ"}


@pytest.mark.slow
def test_two_evaluate_runs_started_together_on_one_results_file_keep_all_tasks(senteval_root, tmp_path):
    out = tmp_path / "results.json"
    env = {**os.environ, "SENTENCE_DATA": str(senteval_root), "PROJECT_ROOT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    common = ["encoder=bow_glove", "evaluation.kfold=2", "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]",
              f"results_file={out}"]
    runs = [processes.start([sys.executable, str(ROOT / "evaluate.py"), tasks, *common], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for tasks in ("tasks=[MR,CR]", "tasks=[SUBJ,MPQA]")]
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-2000:]
    assert set(json.loads(out.read_text())["results"]) == {"MR", "CR", "SUBJ", "MPQA"}


@pytest.mark.slow  # processes started at once: over a second
def test_processes_appending_to_failed_jobs_at_once_lose_no_line(tmp_path):
    code = f"import sys; sys.path[:0] = {[str(ROOT)]!r}; " \
           "from tests.helpers.worker_jobs import append_failures; append_failures(sys.argv[1], int(sys.argv[2]))"
    procs = [processes.start([sys.executable, "-c", code, str(tmp_path), str(w)]) for w in (1, 2, 3)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = (tmp_path / FAILED_JOBS).read_text().splitlines()
    assert len(lines) == 600 and len({(json.loads(line)["overrides"][0], json.loads(line)["job"])
                                      for line in lines}) == 600
