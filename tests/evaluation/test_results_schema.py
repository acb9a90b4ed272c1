"""The one results schema: what read_results accepts (each writer's file, and the flat test_results.json of older
runs) and what it refuses in one line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sentence_lab.evaluation.protocol import PROTOTYPE
from sentence_lab.evaluation.results import (
    SCHEMA_VERSION,
    ResultsWriter,
    document_of_test_scores,
    percent_score,
    protocol_record,
    read_items,
    read_results,
    results_meta,
    to_jsonable,
)


def _write(path, doc) -> None:
    path.write_text(json.dumps(to_jsonable(doc)), encoding="utf-8")


def test_a_writers_file_reads_back_as_it_was_written(tmp_path):
    meta = results_meta("evaluate", protocol_record(PROTOTYPE, encode_batch_size=64), {"name": "toy"}, ["MR"],
                        data_dir="/data")
    writer = ResultsWriter(tmp_path / "results.json", meta)
    writer.add_result("MR", {"acc": 71.5, "devacc": 72.0, "main_score": 71.5, "main_metric": "acc", "n": 10})
    writer.add_skipped("SST2", "SST2: no data")
    doc = read_results(writer.path)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "evaluate"
    assert doc["protocol"]["standard"] == "SentEval" and doc["protocol"]["kfold"] == PROTOTYPE.kfold
    assert doc["protocol"]["encode_batch_size"] == 64 and doc["data_dir"] == "/data"
    assert doc["results"]["MR"]["main_score"] == 71.5 and doc["skipped"] == {"SST2": "SST2: no data"}
    assert doc["errors"] == {} and "python" in doc["versions"]


def test_test_scores_become_one_entry_per_metric(tmp_path):
    doc = document_of_test_scores({"test/snli_test/acc": 0.81, "test/mnli_dev/acc": 0.62}, "/run/checkpoints/best.ckpt")
    _write(tmp_path / "test_results.json", doc)
    back = read_results(tmp_path / "test_results.json")
    assert back["kind"] == "test" and back["checkpoint"].endswith("best.ckpt")
    assert back["results"]["test/snli_test/acc"] == {"main_score": 0.81, "main_metric": "acc"}


def test_a_flat_test_results_file_of_an_older_run_is_read_as_kind_test(tmp_path):
    path = tmp_path / "test_results.json"
    path.write_text(json.dumps({"test/snli_test/acc": 0.8, "checkpoint": "best.ckpt"}))
    doc = read_results(path)
    assert doc["kind"] == "test" and doc["checkpoint"] == "best.ckpt"
    assert doc["results"] == {"test/snli_test/acc": {"main_score": 0.8, "main_metric": "acc"}}


@pytest.mark.parametrize("content, says", [
    ("{not json", "not a readable results file"),
    ('{"acc": 1}', "no 'results' in it"),
    ('[1, 2]', "no 'results' in it"),
    ('{"results": {"MR": {"acc": 70}}}', "the result of MR has no main_score"),
])
def test_anything_else_is_refused_in_one_line(tmp_path, content, says):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=says) as err:
        read_results(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_percent_score_puts_correlations_on_the_accuracies_scale():
    assert percent_score({"main_score": 81.2, "main_metric": "acc"}) == 81.2
    assert percent_score({"main_score": 0.7275, "main_metric": "pearson"}) == pytest.approx(72.75)
    assert percent_score({"main_score": 0.55, "main_metric": "all.spearman.wmean"}) == pytest.approx(55.0)
    assert percent_score({"main_score": 0.9, "main_metric": "mse"}) == 0.9
    assert percent_score({"main_score": None, "main_metric": "acc"}) is None
    assert percent_score(None) is None


def test_schema_1_files_read_as_they_are_and_newer_ones_are_refused(tmp_path):
    old = {"schema_version": 1, "kind": "evaluate", "results": {"MR": {"main_score": 70.0, "main_metric": "acc"}}}
    _write(tmp_path / "old.json", old)
    assert read_results(tmp_path / "old.json")["results"] == old["results"]
    _write(tmp_path / "new.json", {**old, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(ValueError, match=f"results schema {SCHEMA_VERSION + 1}, newer than this checkout's"):
        read_results(tmp_path / "new.json")


def test_items_go_beside_the_json_and_are_read_as_data(tmp_path):
    writer = ResultsWriter(tmp_path / "epoch_003.json", {"kind": "epoch"})
    items = {"ids": np.array([3, 1], dtype=np.uint64), "gold": np.array([0, 1]), "pred": np.array([0, 0]),
             "layer_0/pred": np.array([1, 1])}
    writer.add_items("TREC", items)
    writer.add_result("TREC", {"main_score": 50.0, "main_metric": "acc"})
    assert read_results(writer.path)["items_file"] == "epoch_003.items.npz"
    back = read_items(tmp_path / "epoch_003.items.npz")
    assert set(back) == {"TREC"} and all(np.array_equal(back["TREC"][k], v) for k, v in items.items())
    np.savez(tmp_path / "pickled.npz", **{"TREC/pred": np.array([{"x": 1}], dtype=object)})
    with pytest.raises(ValueError, match="pickled.npz: not a readable per-item file"):
        read_items(tmp_path / "pickled.npz")


def test_a_merged_run_keeps_the_items_of_the_tasks_it_does_not_run(tmp_path):
    first = ResultsWriter(tmp_path / "r.json", {"kind": "evaluate"}, merge_with_file=True)
    first.add_items("MR", {"ids": np.array([1], dtype=np.uint64), "gold": np.array([1]), "pred": np.array([1])})
    first.add_result("MR", {"main_score": 100.0, "main_metric": "acc"})
    second = ResultsWriter(tmp_path / "r.json", {"kind": "evaluate"}, merge_with_file=True)
    second.claim(["TREC"])
    second.add_items("TREC", {"ids": np.array([2], dtype=np.uint64), "gold": np.array([0]), "pred": np.array([1])})
    second.add_result("TREC", {"main_score": 0.0, "main_metric": "acc"})
    assert set(read_items(tmp_path / "r.items.npz")) == {"MR", "TREC"}
