"""GPU check records kept in the repository, and the results page's table written from the newest."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib import gpu_records

ROOT = Path(__file__).resolve().parents[3]


def test_the_results_page_shows_the_newest_record():
    path, record = gpu_records.newest(ROOT / "docs" / "gpu")
    page = (ROOT / "docs" / "results.md").read_text()
    wanted = gpu_records.rewrite(page, gpu_records.table(record, path.relative_to(ROOT).as_posix()))
    assert page == wanted, "docs/results.md's GPU table is stale: run python scripts/gpu_results_table.py"


def test_every_kept_record_has_the_required_keys_and_its_file_name():
    for path in (ROOT / "docs" / "gpu").glob("*.json"):
        record = json.loads(path.read_text())
        assert set(gpu_records.REQUIRED) <= set(record), path.name
        assert path.name == gpu_records.file_name(record)


def _check() -> dict:
    epoch = {"eval_seconds": 30.0, "task_seconds": {"SICKRelatedness": 12.0, "MR": 1.0}}
    return {"started": "2026-12-01T10:00:00", "seconds": 281.4,
            "environment": {"revision": "abc1234", "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.13.0+cu130"},
            "parts": {"default run": {"epochs": {"0": epoch, "1": {**epoch, "eval_seconds": 36.0,
                                                                 "task_seconds": {"SICKRelatedness": 14.0}}},
                                      "mean_trained": 69.1, "mean_epoch_0": 66.5},
                      "infersent": {"rows": [
                          {"hidden": 2048, "run": "2048 ours nondeterministic", "speed_ratio": None},
                          {"hidden": 2048, "run": "2048", "speed_ratio": 1.0436,
                           "infersent": {"dev_acc": 35.1}, "ours": {"dev_acc": 36.2}},
                          {"hidden": 256, "run": "256", "speed_ratio": 1.5, "infersent": {"dev_acc": 50.0},
                           "ours": {"dev_acc": 52.0}}]}}}


def test_a_check_gives_its_record():
    record = gpu_records.record_from_check(_check())
    assert set(gpu_records.REQUIRED) <= set(record)
    assert record["suite_s_per_evaluation"] == 33.0  # the mean over the run's evaluations
    assert record["suite_task_seconds"] == {"MR": 1.0, "SICKRelatedness": 13.0}
    assert record["infersent_ratio_2x2048"] == 1.044 and record["ours_dev_acc_2x2048"] == 36.2
    assert record["infersent_ratio_2x256"] == 1.5
    assert (record["default_run_mean_12"], record["default_run_epoch0_mean_12"]) == (69.1, 66.5)
    assert gpu_records.file_name(record) == "2026-12-01-nvidia-h100-80gb-hbm3.json"


def test_a_check_without_parts_records_none_for_what_it_did_not_measure():
    check = {**_check(), "parts": {}}
    record = gpu_records.record_from_check(check)
    assert record["suite_s_per_evaluation"] is None and record["infersent_ratio_2x2048"] is None
    assert "not measured" in gpu_records.table(record, "x.json")


def test_the_newest_record_is_the_latest_date(tmp_path):
    for date in ("2026-11-27", "2026-12-03", "2026-11-30"):
        (tmp_path / f"{date}-gpu.json").write_text(json.dumps({"date": date}))
    assert gpu_records.newest(tmp_path)[1]["date"] == "2026-12-03"
    with pytest.raises(FileNotFoundError, match="commit a device run"):
        gpu_records.newest(tmp_path / "none")


def test_rewrite_replaces_only_the_marked_table():
    page = f"head\n{gpu_records.START}\nold\n{gpu_records.END}\ntail\n"
    assert gpu_records.rewrite(page, "new") == f"head\n{gpu_records.START}\nnew\n{gpu_records.END}\ntail\n"
    with pytest.raises(ValueError, match="markers"):
        gpu_records.rewrite("no markers", "new")
