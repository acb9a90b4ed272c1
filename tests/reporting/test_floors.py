"""compare and the report print each probing set's floors beside the scores."""
from __future__ import annotations

import json
from pathlib import Path

from sentence_lab.reporting.compare import compare_table
from sentence_lab.reporting.floors import floor_cell, floors_table
from sentence_lab.reporting.report import build_report
from tests.reporting.test_report import fake_run

TENSE_FLOORS = {"majority": 50.0, "length": 55.71, "nb_uni_tfidf": 68.81, "nb_bi_tfidf": 68.1, "seconds": 0.2}


def _doc(score: float, floors: dict | None, source: dict | None = None) -> dict:
    result = {"main_score": score, "main_metric": "acc", "ntest": 420}
    if floors is not None:
        result["floors"] = floors
    if source is not None:
        result["source_baseline"] = source
    return {"results": {"Tense": result, "MR": {"main_score": 70.0, "main_metric": "acc", "ntest": 1000}}}


def test_the_floor_cell_is_named():
    assert floor_cell({"floors": TENSE_FLOORS}) == "68.81 NB-uni-tfidf"
    assert floor_cell({"main_score": 3}) == ""


def test_compare_shows_the_floor_beside_each_probing_score_and_the_rows_below():
    runs = [("a", _doc(80.0, TENSE_FLOORS, {"majority": 50.0, "group": 50.0, "document": 55.7})),
            ("b", _doc(70.0, TENSE_FLOORS))]
    table = compare_table(runs)
    assert "| task | a | b | floor |" in table
    assert "| Tense | 80.00 | 70.00 ▼ | 68.81 NB-uni-tfidf |" in table
    assert "| MR | 70.00 | 70.00 ≈ | - |" in table
    assert "| Tense | 50.00 | 55.71 | 68.81 | 68.10 | 50.00 |" in table  # one set: one row, source only from a


def test_runs_on_different_sets_get_a_row_each():
    other = dict(TENSE_FLOORS, nb_uni_tfidf=77.7)
    table = floors_table([("a", _doc(80.0, TENSE_FLOORS)), ("b", _doc(70.0, other)), ("c", _doc(1.0, other))],
                         ["Tense"])
    assert "| Tense (a) | 50.00 | 55.71 | 68.81 |" in table and "| Tense (b, c) | 50.00 | 55.71 | 77.70 |" in table
    assert compare_table([("a", _doc(1.0, None))]).count("floor") == 0  # nothing to show: no column, no table


def test_the_report_prints_the_floors_of_the_last_epoch(tmp_path: Path):
    run = fake_run(tmp_path, "a", {0: {"Tense": 60.0}})
    doc = {"epoch": 0, "results": {"Tense": {"main_score": 60.0, "floors": TENSE_FLOORS}}}
    (run / "eval" / "epoch_000.json").write_text(json.dumps(doc))
    build_report(tmp_path)
    assert "| Tense | 50.00 | 55.71 | 68.81 | 68.10 | - |" in (tmp_path / "report.md").read_text()
