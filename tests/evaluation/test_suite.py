"""EvaluationSuite: tasks loaded once, run for an encoder into a results file; the three file policies (merge,
resume, overwrite), another writer of the same file, and one suite reused for several runs."""
from __future__ import annotations

import json

import pytest

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import SCHEMA_VERSION, ResultsWriter, read_results, to_jsonable
from sentence_lab.evaluation.runner import load_tasks, run_tasks
from sentence_lab.evaluation.suite import EvaluationSuite, IncompatibleResultsFile
from sentence_lab.tasks import UnknownTask
from tests.helpers.hash_encoder import HashEncoder

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")


class Named(HashEncoder):
    """The fixture encoder under another name (a results file of another encoder)."""

    def describe(self) -> dict:
        return {"name": "another"}


def _scores(doc: dict) -> dict:
    return {task: result["main_score"] for task, result in doc["results"].items()}


def test_a_run_writes_the_header_and_the_runners_scores(senteval_root, hash_encoder, tmp_path):
    suite = EvaluationSuite(["MR", "STS13", "TopConstituents"], senteval_root, FAST, encode_batch_size=32)
    assert suite.task_names == ["MR", "STS13", "TopConstituents"] and suite.has_data
    out = tmp_path / "res" / "results.json"
    doc = suite.run(hash_encoder, out, note="fixture")
    assert read_results(out) == to_jsonable(doc) and "| MR |" in out.with_suffix(".md").read_text()
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "evaluate" and doc["note"] == "fixture"
    assert doc["encoder"] == {"name": "hash", "dim": 16}  # the encoder's own describe()
    assert doc["tasks"] == ["MR", "STS13", "TopConstituents"] and "TopConstituents" in doc["skipped"]
    assert doc["data_dir"] == str(senteval_root) and doc["probing_source"] == "auto"
    assert doc["protocol"]["standard"] == "SentEval" and doc["protocol"]["kfold"] == 2
    assert doc["protocol"]["encode_batch_size"] == 32 and max(hash_encoder.calls) <= 32
    fresh = run_tasks(load_tasks(["MR", "STS13"], senteval_root), HashEncoder(), FAST,
                      ResultsWriter(tmp_path / "fresh.json", {}))
    assert _scores(doc) == _scores(fresh)


def test_one_suite_runs_again_on_its_loaded_data(senteval_root, tmp_path):
    suite = EvaluationSuite(["Length", "STS13"], senteval_root, FAST)
    first, second = HashEncoder(), HashEncoder()
    a = suite.run(first, tmp_path / "a.json")
    assert all(task.data is not None for task in suite.tasks)  # the run worked on copies
    b = suite.run(second, tmp_path / "b.json", kind="epoch", encoder_description={"name": "hash"}, epoch=1)
    assert _scores(a) == _scores(b) and set(_scores(a)) == {"Length", "STS13"}
    assert sorted(first.seen) == sorted(second.seen)  # every sentence encoded again, once
    assert b["kind"] == "epoch" and b["epoch"] == 1


def test_merge_keeps_the_files_other_tasks_and_replaces_the_ones_run(senteval_root, hash_encoder, tmp_path):
    out = tmp_path / "results.json"
    EvaluationSuite(["STS13", "STS14"], senteval_root, FAST).run(hash_encoder, out)
    stale = json.loads(out.read_text())
    stale["results"]["STS14"]["main_score"] = 123.0  # an older STS14, about to be run again
    out.write_text(json.dumps(stale))
    doc = EvaluationSuite(["STS14", "STS15"], senteval_root, FAST).run(hash_encoder, out)  # merge: the default
    assert set(doc["results"]) == {"STS13", "STS14", "STS15"} and doc["merged"]["tasks_kept"] == ["STS13"]
    assert doc["results"]["STS14"]["main_score"] != 123.0 and doc["results"]["STS13"] == stale["results"]["STS13"]
    assert read_results(out) == to_jsonable(doc)


def test_merge_takes_the_tasks_another_writer_adds_meanwhile(senteval_root, tmp_path):
    out = tmp_path / "results.json"
    suite = EvaluationSuite(["STS13"], senteval_root, FAST)

    class WithNeighbour(HashEncoder):
        """Another evaluation of the same file writes CR while this one encodes."""

        def encode(self, sentences):
            other = ResultsWriter(out, json.loads(out.read_text()), merge_with_file=True)
            other.claim(["CR"])
            other.add_result("CR", {"main_score": 70.0, "main_metric": "acc"})
            return super().encode(sentences)

    doc = suite.run(WithNeighbour(), out, encoder_description={"name": "hash"})
    assert set(doc["results"]) == {"STS13", "CR"} and set(read_results(out)["results"]) == {"STS13", "CR"}


def test_resume_keeps_the_finished_tasks_and_runs_the_others(senteval_root, tmp_path):
    out = tmp_path / "results.json"
    EvaluationSuite(["STS13"], senteval_root, FAST).run(HashEncoder(), out)
    done = json.loads(out.read_text())
    done["results"]["STS13"]["main_score"] = 123.0  # a run killed after STS13: it must not run again
    out.write_text(json.dumps(done))
    suite = EvaluationSuite(["STS13", "STS14"], senteval_root, FAST)
    encoder = HashEncoder()
    doc = suite.run(encoder, out, on_existing="resume")
    assert doc["results"]["STS13"]["main_score"] == 123.0 and "STS14" in doc["results"]
    assert doc["resumed"]["tasks_kept"] == ["STS13"] and read_results(out) == to_jsonable(doc)
    sts14 = set(next(t for t in suite.tasks if t.spec.name == "STS14").data.sentences())
    assert set(encoder.seen) == sts14  # STS13 was not encoded
    again = suite.run(HashEncoder(), out, on_existing="resume")  # the suite still holds STS13's data
    assert _scores(again) == _scores(doc) and again["resumed"]["tasks_kept"] == ["STS13", "STS14"]


def test_overwrite_replaces_a_file_even_of_another_encoder(senteval_root, hash_encoder, tmp_path):
    out = tmp_path / "results.json"
    EvaluationSuite(["STS13", "STS14"], senteval_root, FAST).run(Named(), out)
    doc = EvaluationSuite(["STS15"], senteval_root, FAST).run(hash_encoder, out, on_existing="overwrite")
    assert set(doc["results"]) == {"STS15"} and "merged" not in doc and "resumed" not in doc
    assert read_results(out)["encoder"]["name"] == "hash"


@pytest.mark.parametrize("on_existing", ["merge", "resume"])
def test_another_encoders_file_is_refused_in_one_line_and_left_alone(on_existing, senteval_root, hash_encoder,
                                                                    tmp_path):
    out = tmp_path / "results.json"
    EvaluationSuite(["STS13"], senteval_root, FAST).run(Named(), out)
    before = out.read_text()
    with pytest.raises(IncompatibleResultsFile, match="another encoder") as err:
        EvaluationSuite(["STS14"], senteval_root, FAST).run(hash_encoder, out, on_existing=on_existing)
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value) and "overwrite=true" in str(err.value)
    assert out.read_text() == before and hash_encoder.calls == []


def test_bad_arguments_are_refused_before_anything_runs(senteval_root, hash_encoder, tmp_path):
    with pytest.raises(UnknownTask):
        EvaluationSuite(["STS13", "Bogus"], senteval_root, FAST)
    suite = EvaluationSuite(["STS13"], senteval_root, FAST)
    with pytest.raises(ValueError, match="on_existing='replace'"):
        suite.run(hash_encoder, tmp_path / "r.json", on_existing="replace")
    assert not (tmp_path / "r.json").exists()
    assert not EvaluationSuite(["MR"], tmp_path / "nowhere", FAST).has_data


def test_a_time_budget_skips_the_tasks_left(senteval_root, hash_encoder, tmp_path):
    doc = EvaluationSuite(["STS13", "STS14"], senteval_root, FAST).run(hash_encoder, tmp_path / "r.json",
                                                                      budget_seconds=0.0)
    assert not doc["results"] and "time budget of 0 s" in doc["skipped"]["STS14"]
