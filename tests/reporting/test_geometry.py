"""report.py's layer geometry: the CKA heat map beside alignment/uniformity, and each layer's CKA between seeds."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.evaluation.geometry.cka import linear_cka
from sentence_lab.evaluation.geometry.tracking import LayerGeometry, draw_sample, read_layers
from sentence_lab.reporting.report import build_report
from sentence_lab.reporting.runs import find_runs
from tests.reporting.test_report import fake_run

SENTENCES = [f"a sentence of the suite number {i} ." for i in range(40)]


class Layered:
    """Two layers from a seed of its own (a run's initialisation) and an epoch's drift of the top layer."""

    layers_end_with_output = True

    def __init__(self, seed: int, drift: float) -> None:
        self.seed, self.drift = seed, drift

    def encode_layers(self, sentences: list[str]) -> list[np.ndarray]:
        index = np.array([SENTENCES.index(s) for s in sentences])
        base = np.random.default_rng(0).normal(size=(len(SENTENCES), 5))[index]
        weights = np.random.default_rng(self.seed).normal(size=(5, 4))
        top = np.tanh(base @ weights) + self.drift * np.sin(4 * base[:, :4])
        return [base.astype(np.float32), top.astype(np.float32)]


def geometry_run(root: Path, name: str, seed: int) -> Path:
    run = fake_run(root, name, {0: {"Length": 50.0}, 1: {"Length": 60.0}, 2: {"Length": 65.0}})
    (run / ".hydra" / "overrides.yaml").write_text(f"- seed={seed}\n- encoder=bow\n")
    geometry = LayerGeometry(draw_sample(SENTENCES, 30, 0, None), run / "eval" / "geometry")
    for epoch in (0, 1, 2):
        path = run / "eval" / f"epoch_{epoch:03d}.json"
        doc = json.loads(path.read_text())
        doc["geometry"] = geometry.measure(Layered(seed, 0.5 * epoch), epoch)
        path.write_text(json.dumps(doc))
    return run


def test_the_report_draws_the_cka_heat_map_and_tables_each_layer_between_seeds(tmp_path):
    first, second = geometry_run(tmp_path, "a", 1), geometry_run(tmp_path, "b", 2)
    runs = {r.name: r for r in find_runs(tmp_path)}
    assert runs["a"].cka[0] == pytest.approx({0: 1.0, 1: 1.0, 2: 1.0})  # layer 0 never moves
    assert runs["a"].cka[1][0] == 1.0 and runs["a"].cka[1][2] < runs["a"].cka[1][1] < 1.0  # the top drifts away
    assert set(runs["a"].geometry) == {"uniformity"} and sorted(runs["a"].geometry["uniformity"]) == [0, 1, 2]
    build_report(tmp_path)
    assert (tmp_path / "layer_geometry.png").stat().st_size > 0
    report = (tmp_path / "report.md").read_text()
    assert "## Layers between seeds" in report
    a, b = (read_layers(run / "eval" / "geometry" / "epoch_002.npz") for run in (first, second))
    section = report.split("## Layers between seeds", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| encoder=bow |"))
    assert f"| 2 | {linear_cka(a[0], b[0]):.3f} " in row and f" {linear_cka(a[1], b[1]):.3f} (" in row
    assert linear_cka(a[0], b[0]) == pytest.approx(1.0) and linear_cka(a[1], b[1]) < 0.99  # seeds differ on top


def test_runs_without_geometry_draw_no_such_figure(tmp_path):
    fake_run(tmp_path, "plain", {0: {"Length": 50.0}})
    build_report(tmp_path)
    assert not (tmp_path / "layer_geometry.png").exists() and "Layers between seeds" not in \
        (tmp_path / "report.md").read_text()
