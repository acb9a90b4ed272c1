"""Runs that differ only in their seed: grouped, summarised with Student's t intervals (checked by hand), curves with
bands, and configurations compared against what the seeds explain."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.reporting.report import build_report
from sentence_lab.reporting.seeds import group_by_seed, interval
from tests.reporting.test_report import fake_run

T_975_DF2 = 4.302652729911275  # Student's t, 97.5th percentile, 2 degrees of freedom (a printed table's value)


def seeded_run(root: Path, name: str, overrides: list[str], finals: dict[str, float]) -> Path:
    run = fake_run(root, name, {0: {task: 50.0 for task in finals}, 1: finals})
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    return run


def test_the_interval_is_students_t_over_the_seeds():
    mean, sd, low, high = interval([70.0, 72.0, 77.0])
    assert (mean, sd) == pytest.approx((73.0, np.sqrt(13.0)))
    assert (low, high) == pytest.approx((73 - T_975_DF2 * np.sqrt(13 / 3), 73 + T_975_DF2 * np.sqrt(13 / 3)))
    assert np.isnan(interval([70.0])[1])


@pytest.mark.slow
def test_a_seed_sweep_is_summarised_and_the_better_configuration_marked(tmp_path):
    for seed, (length, mr) in enumerate([(70.0, 60.0), (72.0, 61.0), (77.0, 59.5)], start=1):
        seeded_run(tmp_path, f"base/{seed}", [f"seed={seed}", "encoder=bow"], {"Length": length, "MR": mr})
    for seed, (length, mr) in enumerate([(85.0, 60.5), (86.0, 59.0), (87.0, 61.0)], start=1):
        seeded_run(tmp_path, f"deep/{seed}", ["encoder=bow", f"seed={seed}", "encoder.num_layers=2"],
                   {"Length": length, "MR": mr})
    seeded_run(tmp_path, "alone", ["encoder=gru"], {"Length": 60.0, "MR": 55.0})
    runs = build_report(tmp_path)
    groups = group_by_seed(runs)
    assert [(g.name, len(g.runs)) for g in groups] == [("encoder=gru", 1), ("encoder=bow", 3),
                                                       ("encoder.num_layers=2 encoder=bow", 3)]
    report = (tmp_path / "report.md").read_text()
    half = T_975_DF2 * np.sqrt(13 / 3)
    assert f"| encoder=bow | 3 | 73.00 ± 3.61 [{73 - half:.2f}, {73 + half:.2f}] |" in report
    row = next(line for line in report.splitlines() if line.startswith("| encoder.num_layers=2 encoder=bow | +"))
    assert "+13.00 ▲" in row and "Welch's t" in row  # Length: far beyond the seeds' spread
    assert "+0.00 (p" in row and row.count("▲") == 1  # MR: the same
    assert "encoder=gru" not in report.split("Seeds:")[1]  # one seed: no interval
    assert (tmp_path / "seed_curves.png").stat().st_size > 1000


def test_with_items_the_configurations_are_compared_by_a_two_level_bootstrap(tmp_path):
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 600)
    ids = np.arange(600, dtype=np.uint64)
    for config, accuracy in (("a", 0.6), ("b", 0.8)):
        for seed in (1, 2, 3):
            pred = np.where(rng.random(600) < accuracy, gold, 1 - gold)
            run = seeded_run(tmp_path, f"{config}/{seed}", [f"seed={seed}", f"tags=[{config}]"],
                             {"TREC": 100 * float(np.mean(pred == gold))})
            doc_path = run / "eval" / "epoch_001.json"
            doc = json.loads(doc_path.read_text())
            doc["results"]["TREC"].update(regime="kfold", main_metric="acc")
            doc["items_file"] = "epoch_001.items.npz"
            doc_path.write_text(json.dumps(doc))
            np.savez(run / "eval" / "epoch_001.items.npz", **{"TREC/ids": ids, "TREC/gold": gold, "TREC/pred": pred})
    build_report(tmp_path)
    row = next(line for line in (tmp_path / "report.md").read_text().splitlines() if line.startswith("| tags=[b] | +"))
    assert "▲" in row and "two-level bootstrap" in row
