"""LayerGeometry: a fixed sample, CKA against epoch 0 and the previous evaluation, the files it keeps."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from sentence_lab.evaluation.geometry.cka import linear_cka
from sentence_lab.evaluation.geometry.tracking import LayerGeometry, draw_sample, geometry_metrics, read_layers
from sentence_lab.tasks.base import Split, TaskData

SENTENCES = [f"sentence number {i} ." for i in range(60)]
STSB = TaskData(splits={"dev": Split(a=["a one", "a two", "a three"], b=["b one", "b two", "b three"],
                                     y=np.array([4.0, 3.9, 5.0]))})


class Layered:
    """Two layers of made-up vectors per sentence; ``turn`` rotates layer 1, ``mix`` replaces part of it."""

    layers_end_with_output = True

    def __init__(self, turn: float = 0.0, mix: float = 0.0) -> None:
        self.turn, self.mix, self.calls = turn, mix, 0

    def encode_layers(self, sentences: list[str]) -> list[np.ndarray]:
        self.calls += 1
        base = np.stack([np.random.default_rng(zlib.crc32(s.encode())).normal(size=6) for s in sentences])
        c, s = np.cos(self.turn), np.sin(self.turn)
        rotation = np.eye(6)
        rotation[:2, :2] = [[c, -s], [s, c]]
        top = (1 - self.mix) * np.tanh(base @ rotation) + self.mix * np.sin(3 * base)
        return [base[:, :4].astype(np.float32), top.astype(np.float32)]


def test_the_sample_is_drawn_once_with_its_seed_and_the_positive_pairs_are_gold_4_or_more():
    sample = draw_sample(SENTENCES + SENTENCES[:5], 20, 3, STSB)
    assert len(sample.sentences) == 20 and len(set(sample.sentences)) == 20
    assert sample.sentences == draw_sample(SENTENCES, 20, 3, STSB).sentences  # duplicates do not change the draw
    assert sample.sentences != draw_sample(SENTENCES, 20, 4, STSB).sentences
    assert sample.pairs == [("a one", "b one"), ("a three", "b three")]
    assert draw_sample(SENTENCES, 100, 3, None).describe()["size"] == 60  # all of them; no STS-B: no pairs
    with pytest.raises(ValueError, match="at least two"):
        draw_sample(SENTENCES, 1, 3, STSB)


def test_cka_against_epoch_0_and_the_previous_evaluation_and_the_files_kept(tmp_path):
    sample = draw_sample(SENTENCES, 40, 0, STSB)
    geometry = LayerGeometry(sample, tmp_path)
    first = geometry.measure(Layered(), 0)
    assert first["cka"] == {} and first["layers"] == 2 and first["sample"]["positive_pairs"] == 2
    same = geometry.measure(Layered(turn=0.0), 1)
    assert same["cka"]["vs_epoch0"] == pytest.approx({"0": 1.0, "1": 1.0})
    moved = Layered(mix=0.6)
    second = geometry.measure(moved, 2)
    assert second["cka"]["vs_previous_epoch"] == 1 and second["cka"]["vs_epoch0_epoch"] == 0
    assert second["cka"]["vs_epoch0"]["0"] == pytest.approx(1.0) and second["cka"]["vs_epoch0"]["1"] < 0.99
    # the value is linear CKA of those very vectors
    then, now = Layered().encode_layers(sample.sentences)[1], moved.encode_layers(sample.sentences)[1]
    assert second["cka"]["vs_epoch0"]["1"] == pytest.approx(linear_cka(then, now), rel=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch_000.npz", "epoch_002.npz"]  # epoch 0, the latest
    # a resumed run (a new object) compares with the same epoch 0 and with the latest it finds
    resumed = LayerGeometry(sample, tmp_path).measure(Layered(mix=0.6), 3)
    assert resumed["cka"]["vs_previous"] == pytest.approx({"0": 1.0, "1": 1.0})
    assert resumed["cka"]["vs_epoch0"]["1"] == pytest.approx(second["cka"]["vs_epoch0"]["1"], rel=1e-6)
    top = moved.encode_layers(sample.sentences + ["a one", "b one", "a three", "b three"])[1]
    unit = top / np.linalg.norm(top, axis=1, keepdims=True)
    assert second["alignment"] == pytest.approx(np.mean([np.sum((unit[40] - unit[41]) ** 2),
                                                         np.sum((unit[42] - unit[43]) ** 2)]), rel=1e-5)
    assert np.isfinite(second["uniformity"]) and second["uniformity"] < 0


def test_a_planted_pickle_among_the_saved_layers_is_never_loaded(tmp_path):
    np.savez(tmp_path / "epoch_000.npz", layer_0=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        read_layers(tmp_path / "epoch_000.npz")


def test_the_logged_names_are_per_layer_and_per_reference():
    section = {"cka": {"vs_epoch0": {"0": 0.9, "1": 0.5}, "vs_previous": {"0": 1.0, "1": float("nan")},
                       "vs_epoch0_epoch": 0}, "alignment": 0.4, "uniformity": -2.0}
    assert geometry_metrics(section) == {"cka/layer_0/vs_epoch0": 0.9, "cka/layer_1/vs_epoch0": 0.5,
                                         "cka/layer_0/vs_previous": 1.0, "geometry/alignment": 0.4,
                                         "geometry/uniformity": -2.0}
    assert geometry_metrics(None) == {} and geometry_metrics({"error": "x"}) == {}
