"""The per-layer view of the suite (``layers=true``): each layer of an encoder scored as if it were the encoder, the
task's own score untouched, failures of the layers recorded beside it, the layers' files gone after each task."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.evaluation import runner
from sentence_lab.evaluation.encoders.text_encoders import NonFiniteOutput
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import items_path, read_items, read_results
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.evaluation.vectors.layer_store import LayerStore
from sentence_lab.training.eval_suite import layer_metrics
from tests.helpers.hash_encoder import HashEncoder

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")
TASKS = ["MR", "STS13", "Length", "SICKRelatedness"]


class Layered(HashEncoder):
    """Three layers: the sentence's length alone, a scaled and shifted hash vector, the hash vector (the output)."""

    layers_end_with_output = True

    def __init__(self, top_is_output: bool = True, broken_layer: int | None = None) -> None:
        super().__init__()
        self.layers_end_with_output = top_is_output
        self.broken_layer = broken_layer

    def encode_layers(self, sentences: list[str]) -> list[np.ndarray]:
        top = HashEncoder.encode(self, sentences)
        length = np.array([[len(s.split()), 1.0] for s in sentences], dtype=np.float32)
        layers = [length, 3 * top + 1, top]
        if self.broken_layer is not None:
            layers[self.broken_layer] = np.full_like(layers[self.broken_layer], np.nan)
        return layers


class OneLayer(Layered):
    """An encoder whose output is layer ``k`` of :class:`Layered`."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def encode(self, sentences: list[str]) -> np.ndarray:
        return self.encode_layers(sentences)[self.k]


def scores(doc: dict) -> dict[str, float]:
    return {task: r["main_score"] for task, r in doc["results"].items()}


@pytest.mark.slow
def test_each_layer_scores_as_that_layer_alone_would(senteval_root, tmp_path):
    suite = EvaluationSuite(TASKS, senteval_root, FAST, layers=True)
    doc = suite.run(Layered(), tmp_path / "layers.json")
    plain = EvaluationSuite(TASKS, senteval_root, FAST).run(HashEncoder(), tmp_path / "plain.json")
    assert scores(doc) == scores(plain)  # the task's own score is the output's, as without layers
    for k in (0, 1):
        alone = EvaluationSuite(TASKS, senteval_root, FAST).run(OneLayer(k), tmp_path / f"alone{k}.json")
        assert {t: r["layers"][str(k)]["main_score"] for t, r in doc["results"].items()} == scores(alone)
    for result in doc["results"].values():
        top = result["layers"]["2"]
        assert top["output"] is True and top["main_score"] == result["main_score"] and top["width"] == 16
        assert result["layers"]["0"]["width"] == 2 and result["layers_encode_seconds"] <= result["layers_seconds"]
    assert read_results(tmp_path / "layers.json")["layers"].startswith("every layer scored")


def test_a_top_layer_that_is_not_the_output_is_scored_itself(senteval_root, tmp_path):
    doc = EvaluationSuite(["MR"], senteval_root, FAST, layers=True).run(Layered(top_is_output=False),
                                                                        tmp_path / "r.json")
    top = doc["results"]["MR"]["layers"]["2"]
    assert "output" not in top and top["main_score"] == doc["results"]["MR"]["main_score"] and "seconds" in top


def test_broken_layers_fail_alone_and_encoders_without_layers_are_named(senteval_root, tmp_path):
    plain = EvaluationSuite(["MR"], senteval_root, FAST).run(HashEncoder(), tmp_path / "plain.json")
    broken = EvaluationSuite(["MR"], senteval_root, FAST, layers=True).run(Layered(broken_layer=1),
                                                                          tmp_path / "broken.json")
    assert scores(broken) == scores(plain) and not broken["errors"]
    assert broken["results"]["MR"]["layers_error"].startswith("NonFiniteOutput: hash layer 1.encode returned NaN")
    assert "layers" not in broken["results"]["MR"]
    flat = EvaluationSuite(["MR"], senteval_root, FAST, layers=True).run(HashEncoder(), tmp_path / "flat.json")
    assert scores(flat) == scores(plain)
    assert flat["results"]["MR"]["layers_error"].startswith("hash does not expose its layers")


def test_a_layer_failing_after_others_scored_leaves_no_layer_predictions(senteval_root, tmp_path, monkeypatch):
    calls = []

    def third_call_fails(*args, **kwargs):  # the output, layer 0, then layer 1 fails
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("layer 1's probe failed")
        return score(*args, **kwargs)

    score = runner.score
    monkeypatch.setattr(runner, "score", third_call_fails)
    doc = EvaluationSuite(["MR"], senteval_root, FAST, layers=True).run(Layered(top_is_output=False),
                                                                       tmp_path / "r.json")
    assert doc["results"]["MR"]["layers_error"] == "RuntimeError: layer 1's probe failed" and len(calls) == 3
    items = read_items(items_path(tmp_path / "r.json"))["MR"]
    assert "pred" in items and not [c for c in items if c.startswith("layer_")]  # layer 0's were not kept


def test_the_layer_store_reads_rows_by_sentence_and_removes_its_files(tmp_path):
    sentences = ["a b c", "a", "b c", "a"]
    store = LayerStore.encode(Layered(), sentences, batch_size=2, directory=tmp_path)
    folder = store.folder
    assert len(store) == 3 and store.widths == [2, 16, 16] and len(list(folder.glob("layer_*.npy"))) == 3
    np.testing.assert_array_equal(store.embedder(0)(["b c", "a", "a"]), [[2, 1], [1, 1], [1, 1]])
    np.testing.assert_array_equal(store.embedder(2)(["a b c"]), HashEncoder().encode(["a b c"]))
    store.close()
    assert not folder.exists()
    with pytest.raises(NonFiniteOutput):
        LayerStore.encode(Layered(broken_layer=0), sentences, directory=tmp_path)
    assert not list(tmp_path.iterdir())  # a failed pass leaves nothing behind


def test_layer_scores_are_logged_beside_the_tasks_own_tag():
    doc = {"results": {"Length": {"main_score": 50.0, "layers": {"0": {"main_score": 80.0},
                                                                   "1": {"main_score": None}}},
                       "MR": {"main_score": 60.0}}}
    assert layer_metrics(doc, lambda task: f"probing/{task}") == {"probing/Length/layer_0": 80.0}
