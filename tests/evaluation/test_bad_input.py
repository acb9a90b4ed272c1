"""Bad input: one line naming the cause and the fix, and nothing already written is lost."""
import json

import numpy as np
import pytest

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import ResultsWriter
from sentence_lab.evaluation.runner import load_tasks, run_task, run_tasks
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from tests.evaluation.test_cli import _evaluate

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,))


def _sst(root):
    return root / "senteval" / "SST" / "binary"


def test_empty_dev_or_test_split_is_an_error_naming_the_split(senteval_root):
    for split in ("dev", "test"):
        path = _sst(senteval_root) / f"sentiment-{split}"
        kept = path.read_text()
        path.write_text("")
        (sst,) = load_tasks(["SST2"], senteval_root)
        assert sst.data is None and not sst.missing
        assert f"the {split} split is empty" in sst.error and "\n" not in sst.error
        path.write_text(kept)


def test_truncated_split_file_names_the_line(senteval_root):
    path = _sst(senteval_root) / "sentiment-train"
    path.write_text(path.read_text() + "a sentence cut before its label\n")
    (sst,) = load_tasks(["SST2"], senteval_root)
    assert "malformed data" in sst.error and "sentiment-train, line" in sst.error


def test_constant_features_in_relatedness_are_an_error_not_a_score(senteval_root):
    class Constant:
        def encode(self, sentences):
            return np.ones((len(sentences), 4), dtype=np.float32)

        def describe(self):
            return {"name": "constant"}

    loaded = load_tasks(["SICKRelatedness", "STS13"], senteval_root)
    doc = run_tasks(loaded, Constant(), FAST, ResultsWriter(senteval_root / "r.json", {}))
    assert "same features" in doc["errors"]["SICKRelatedness"]
    assert "SICKRelatedness" not in doc["results"] and "STS13" in doc["results"]


@pytest.mark.slow
def test_missing_data_dir_or_no_requested_task_exits_non_zero(tmp_path):
    proc = _evaluate(tmp_path / "nowhere", "tasks=[MR,STS13]", cwd=tmp_path, here=True)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "SENTENCE_DATA" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = _evaluate(tmp_path / "empty", "tasks=[MR,STS13]", cwd=tmp_path, here=True)
    assert proc.returncode == 2 and "no data for any requested task" in proc.stderr


@pytest.mark.slow
def test_resume_keeps_finished_tasks_and_refuses_another_encoder(senteval_root, tmp_path):
    out = tmp_path / "r.json"
    assert _evaluate(senteval_root, "tasks=[STS13]", f"results_file={out}", cwd=tmp_path, here=True).returncode == 0
    first = json.loads(out.read_text())["results"]["STS13"]
    # a run killed after STS13: its file holds STS13 only; resuming runs what is left
    proc = _evaluate(senteval_root, "tasks=[STS13,STS14]", "resume=true", f"results_file={out}", cwd=tmp_path,
                     here=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
    doc = json.loads(out.read_text())
    assert doc["results"]["STS13"] == first and "STS14" in doc["results"]
    assert doc["resumed"]["tasks_kept"] == ["STS13"]
    proc = _evaluate(senteval_root, "tasks=[STS15]", "encoder=length", "resume=true", f"results_file={out}",
                     cwd=tmp_path, here=True)
    assert proc.returncode == 2 and "another encoder" in proc.stderr
    assert json.loads(out.read_text())["results"].keys() == {"STS13", "STS14"}  # nothing lost


def test_float64_encoder_keeps_float64_for_cosine(senteval_root):
    class Double:
        def encode(self, sentences):
            return np.random.default_rng(0).normal(size=(len(sentences), 3))

        def describe(self):
            return {"name": "double"}

    cache = EmbeddingCache(Double())
    assert cache.embed(["a b", "c d"]).dtype == np.float64
    (sts,) = load_tasks(["STS13"], senteval_root)
    assert run_task(sts, cache, FAST)["main_score"] is not None
