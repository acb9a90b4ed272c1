"""Every figure the report draws lays its texts out without overlap: no two drawn texts' boxes meet (titles, axis
labels, tick labels, legends, suptitles) and no legend lies over a panel, with two rows of panels and long names."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sentence_lab.reporting import figures, study
from sentence_lab.reporting.runs import Run
from sentence_lab.reporting.seeds import SeedGroup
from tests.helpers.figure_layout import overlapping_texts
from tests.reporting.test_study import sweep_study

matplotlib.use("Agg")

PROBING = ["Length", "WordContent", "Depth", "TopConstituents", "BigramShift", "Tense", "SubjNumber", "ObjNumber",
           "OddManOut", "CoordinationInversion"]
DOWNSTREAM = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICKEntailment", "STS14", "STSBenchmark"]


def _run(index: int) -> Run:
    rng = np.random.default_rng(index)
    curves = {task: {epoch: float(50 + 10 * rng.random() + 3 * epoch) for epoch in range(4)}
              for task in PROBING + DOWNSTREAM}
    families = {**{t: "probing" for t in PROBING}, **{t: "transfer" for t in DOWNSTREAM}}
    return Run(Path(f"run{index}"), f"a_long_run_name_{index}_objective=qt_encoder=bilstm_max",
               choices={"objective": "qt", "encoder": "bilstm_max"}, curves=curves, families=families,
               probes={t: "logreg, l2=0.001" for t in PROBING},
               loss=[(step, 5.0 / (1 + step + index)) for step in range(0, 400, 20)],
               measures={"selectivity": {t: {e: float(rng.random() * 20) for e in range(4)} for t in PROBING},
                         "mdl_kbits": {t: {e: float(rng.random() * 90) for e in range(4)} for t in PROBING}},
               layers={t: {k: {e: float(rng.random()) for e in range(4)} for k in range(3)} for t in PROBING[:4]})


def _draw(name: str, monkeypatch, tmp_path: Path, *args) -> list[str]:
    drawn: list[list[str]] = []
    save = figures._save

    def save_and_check(fig, path):
        save(fig, path)
        drawn.append(overlapping_texts(fig))

    monkeypatch.setattr(figures, "_save", save_and_check)
    assert getattr(figures, name)(*args, tmp_path / f"{name}.png") is True
    assert (tmp_path / f"{name}.png").stat().st_size > 0 and len(drawn) == 1
    return drawn[0]


@pytest.mark.slow  # drawing and measuring a figure takes a second or more
@pytest.mark.parametrize("name", ["plot_probing_curves", "plot_probing_layers", "plot_probing_measures",
                                  "plot_correlations", "plot_losses"])
@pytest.mark.parametrize("count", [1, 5])
def test_a_figure_of_one_or_five_runs_draws_no_text_over_another(name, count, monkeypatch, tmp_path):
    # five: two rows of panels where a figure has one per run; correlations across runs need three at least
    runs = [_run(i) for i in range(max(count, 3) if name == "plot_correlations" else count)]
    assert _draw(name, monkeypatch, tmp_path, runs) == []


@pytest.mark.slow
def test_the_seed_bands_draw_no_text_over_another(monkeypatch, tmp_path):
    groups = [SeedGroup(f"objective=qt encoder=bilstm_max group {g}", [_run(10 * g + s) for s in range(3)])
              for g in range(4)]
    assert _draw("plot_seed_bands", monkeypatch, tmp_path, groups) == []


def test_the_check_finds_a_legend_over_its_panel_and_a_title_over_a_label():
    """The check itself: the old layout (a legend inside the first panel, no layout engine) fails it."""
    fig = Figure(figsize=(5, 3.6))
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1)
    for task in PROBING:
        top.plot(range(4), np.arange(4) + len(task), label=task)
    top.set_xlabel("epoch (0 = untrained)")
    bottom.set_title("a title the label above runs into")
    fig.legend(loc="center")
    found = overlapping_texts(fig)
    assert any("legend over the panel" in f for f in found)
    assert any("'epoch (0 = untrained)' over" in f or "over 'epoch (0 = untrained)'" in f for f in found)


@pytest.mark.slow
@pytest.mark.parametrize("directions", [["maximize"], ["maximize", "maximize"]], ids=["one", "two objectives"])
def test_the_study_figures_draw_no_text_over_another(directions, monkeypatch, tmp_path):
    drawn: dict[str, list[str]] = {}
    save = study._save

    def save_and_check(fig, path):
        save(fig, path)
        drawn[path.name] = overlapping_texts(fig)

    monkeypatch.setattr(study, "_save", save_and_check)
    sweep_study(tmp_path, directions)
    study.study_report(tmp_path)
    expected = {"optuna_history.png", "optuna_curves.png", "optuna_importances.png"} if len(directions) == 1 else \
        {"pareto_front.png"}
    assert expected <= set(drawn)
    assert {name: found for name, found in drawn.items() if found} == {}
