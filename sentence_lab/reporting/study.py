"""An Optuna sweep's study in the report: its trials (complete, pruned, failed), the best parameters (or the Pareto
front), each parameter's importance, and figures drawn by Optuna's own matplotlib plots.

Written into the sweep directory by ``report.py <sweep dir>`` when it holds ``study.yaml``: ``study.md`` (also
appended to ``report.md``), ``optuna_history.png`` (the optimisation history), ``optuna_curves.png`` (every trial's
reported score per epoch: where the pruner stopped each), ``optuna_importances.png`` and, for several objectives,
``pareto_front.png``."""
from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from sentence_lab.optuna_storage import INTERRUPTED_BY, PRUNED_AT, RETRY_OF, load_recorded_study
from sentence_lab.reporting.figures import _pyplot, _save
from sentence_lab.text.files import atomic_write_text

log = logging.getLogger(__name__)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def trials_table(study: optuna.Study) -> list[str]:
    """One row per trial: state, value(s), the epoch it was pruned after, each reported score, the parameters."""
    trials = study.get_trials(deepcopy=False)
    params = sorted({name for t in trials for name in t.params})
    epochs = sorted({e for t in trials for e in t.intermediate_values})
    values = ["value"] if len(study.directions) == 1 else [f"value {i}" for i in range(len(study.directions))]
    header = ["trial", "state", *values, "pruned after epoch", *[f"epoch {e}" for e in epochs], *params, "note"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    reruns = {t.user_attrs[RETRY_OF]: t.number for t in trials if RETRY_OF in t.user_attrs}
    for t in trials:
        shown = [_number(v) for v in (t.values or [None] * len(values))]
        note = f"re-run of trial {t.user_attrs[RETRY_OF]}" if RETRY_OF in t.user_attrs else ""
        interrupted = t.user_attrs.get(INTERRUPTED_BY)
        if t.number in reruns:
            note = f"interrupted{f' by {interrupted}' if interrupted else ''}; re-run as trial {reruns[t.number]}"
        state = "interrupted" if interrupted and t.state == TrialState.FAIL else t.state.name.lower()
        row = [str(t.number), state, *shown, str(t.user_attrs.get(PRUNED_AT, "")),
               *[_number(t.intermediate_values.get(e)) for e in epochs], *[str(t.params.get(p, "")) for p in params],
               note]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def importances(study: optuna.Study) -> dict[str, float]:
    """Each parameter's importance (Optuna's default evaluator, PED-ANOVA in Optuna 5) over the complete trials of
    a single-objective study; empty when fewer than two trials completed or nothing varied."""
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    if len(complete) < 2 or len(study.directions) != 1:
        return {}
    try:
        return optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError) as err:
        log.warning("parameter importances: %s", err)
        return {}


def _plot(draw: Callable[[], object], path: Path) -> bool:
    """Save one of Optuna's matplotlib plots; False (logged) when it has nothing to draw."""
    plt = _pyplot()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            axes: Any = draw()  # an Axes, or an array of them
    except (ValueError, RuntimeError) as err:
        log.warning("%s: %s", path.name, err)
        plt.close("all")
        return False
    figure = (axes.flat[0] if hasattr(axes, "flat") else axes).figure
    _save(figure, path)
    plt.close(figure)
    return True


def study_figures(study: optuna.Study, out: Path) -> list[str]:
    """The figures that have something to show, by file name."""
    # imported here, as figures._pyplot imports pyplot: importing this module must not load a plotting backend
    from optuna.visualization import matplotlib as plots

    single = len(study.directions) == 1
    first: Callable[[FrozenTrial], float] | None = None if single else (lambda t: t.values[0])
    drawn = []
    if _plot(lambda: plots.plot_optimization_history(study, target=first, target_name="objective 0" if first
                                                     else "Objective Value"), out / "optuna_history.png"):
        drawn.append("optuna_history.png")
    if single and any(t.intermediate_values for t in study.get_trials(deepcopy=False)):
        if _plot(lambda: plots.plot_intermediate_values(study), out / "optuna_curves.png"):
            drawn.append("optuna_curves.png")
    if importances(study) and _plot(lambda: plots.plot_param_importances(study),
                                    out / "optuna_importances.png"):
        drawn.append("optuna_importances.png")
    if not single and _plot(lambda: plots.plot_pareto_front(study), out / "pareto_front.png"):
        drawn.append("pareto_front.png")
    return drawn


def study_report(root: Path, storage: str | None = None) -> str | None:
    """``study.md`` and the figures for the Optuna sweep in ``root``; returns the markdown (None: no study). The study
    is read from the file in ``root`` its ``study.yaml`` names, or from ``storage`` when the user gives one."""
    study = load_recorded_study(root, storage)
    if study is None:
        return None
    trials = study.get_trials(deepcopy=False)
    states = {s: sum(1 for t in trials if t.state == s) for s in TrialState}
    lines = [f"## Optuna study `{study.study_name}`", "",
             f"{len(trials)} trial(s): " + ", ".join(f"{n} {s.name.lower()}" for s, n in states.items() if n) + "; "
             "directions " + ", ".join(d.name.lower() for d in study.directions) + ".", ""]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if complete and len(study.directions) == 1:
        best = study.best_trial
        lines += [f"Best: trial {best.number}, value {_number(best.value)}, with "
                  + ", ".join(f"`{k}={v}`" for k, v in best.params.items()) + ".", ""]
    elif complete:
        lines += ["Pareto front: trial(s) " + ", ".join(str(t.number) for t in study.best_trials) + ".", ""]
    lines += trials_table(study)
    weights = importances(study)
    if weights:
        lines += ["", "Parameter importance (Optuna's default evaluator over the complete trials): "
                  + ", ".join(f"`{k}` {v:.2f}" for k, v in weights.items()) + "."]
    figures = study_figures(study, root)
    if figures:
        lines += ["", "Figures: " + ", ".join(f"[{f}]({f})" for f in figures)]
    text = "\n".join(lines) + "\n"
    atomic_write_text(root / "study.md", text)
    return text
