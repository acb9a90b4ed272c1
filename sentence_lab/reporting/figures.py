"""The report's figures and the statistics behind them: probing curves per epoch, scores per layer and epoch, the
probing measures,
Spearman correlations between probing and downstream scores across runs, the training loss."""
from __future__ import annotations

import os
import textwrap
from itertools import permutations
from pathlib import Path

import numpy as np
from scipy.stats import rankdata, spearmanr

from sentence_lab.reporting.runs import Run
from sentence_lab.reporting.seeds import SeedGroup, curve_band
from sentence_lab.reporting.tables import task_names
from sentence_lab.text.files import create_temporary_beside


def _pyplot():
    """pyplot on the file-only backend: chosen here, when a figure is drawn, because importing this module must not
    switch the backend of a process that imports it (a notebook's, a test's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    """``fig`` as a PNG drawn into a new file beside ``path`` (an unpredictable name, created exclusively, never
    through a link), then renamed over ``path``; a failed drawing or write removes that file."""
    fd, tmp = create_temporary_beside(path, suffix=".png")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=110, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _epoch_panels(count: int):
    """pyplot, a figure and its ``[rows, cols]`` axes for ``count`` panels of probing accuracy against epochs, three
    a row, one y scale."""
    plt = _pyplot()
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    # constrained layout: every title, label and the legend get their own room (nothing drawn over another text)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False, sharey=True,
                             layout="constrained")
    return plt, fig, axes


def _wrapped(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (a run's name can be longer than its panel)."""
    return textwrap.fill(text, width, break_long_words=True, break_on_hyphens=False)


def _suptitle(fig, text: str, fontsize: float = 12) -> None:
    """The figure's title, broken into lines that fit its width (a one-panel figure is narrower than a long title)."""
    fits = max(20, int(fig.get_figwidth() * 72 / (0.6 * fontsize)))  # characters of about 0.6 em each
    fig.suptitle(_wrapped(text, fits), fontsize=fontsize)


def _label_epoch_panel(ax, title: str) -> None:
    ax.set_title(_wrapped(title, 50), fontsize=9)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("epoch (0 = untrained)")
    ax.set_ylabel("probing accuracy (%)")
    ax.grid(alpha=0.3)


def _outside_legend(fig, axes) -> None:
    """One legend for the figure, below the panels (never over a curve or the title): every label of ``axes``, once,
    in as many columns as the figure's width holds."""
    labelled: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, handle)
    if labelled:
        columns = max(1, min(len(labelled), int(fig.get_figwidth() // 2.5)))
        fig.legend(list(labelled.values()), list(labelled), loc="outside lower center", ncols=columns, fontsize=7)


def _hide_unused(fig, axes, used: int) -> None:
    """Hide the panels past the ``used`` first; one legend below them all."""
    for ax in list(axes.flat)[used:]:
        ax.set_visible(False)
    _outside_legend(fig, list(axes.flat)[:used])


def plot_probing_curves(runs: list[Run], path: Path) -> bool:
    """One panel per run: each probing task's accuracy against epochs of training (references: dashed lines)."""
    references = [r for r in runs if r.reference]
    runs = [r for r in runs if not r.reference and any(r.families.get(t) == "probing" for t in r.curves)]
    if not runs:
        return False
    plt, fig, axes = _epoch_panels(len(runs))
    for ax, run in zip(axes.flat, runs):
        for task in sorted(t for t in run.curves if run.families.get(t) == "probing"):
            epochs = sorted(run.curves[task])
            probe = run.probes.get(task, "").split(",")[0]
            line, = ax.plot(epochs, [run.curves[task][e] for e in epochs], marker="o",
                            label=f"{task} ({probe})" if probe else task)
            for ref in references:
                if ref.final(task) is not None:
                    ax.axhline(ref.final(task), color=line.get_color(), linestyle="--", linewidth=0.8, alpha=0.6)
        _label_epoch_panel(ax, f"{run.name}: {run.choices.get('objective')} / {run.choices.get('encoder')}")
    _hide_unused(fig, axes, len(runs))
    title = "Probing task accuracy per epoch (cf. Conneau et al. 2018, Figure 1)"
    if references:
        title += "; dashed: " + ", ".join(r.choices["encoder"] for r in references)
    _suptitle(fig, title)
    _save(fig, path)
    plt.close(fig)
    return True


def plot_seed_bands(groups: list[SeedGroup], path: Path) -> bool:
    """One panel per configuration with two seeds or more: each probing task's mean accuracy over the seeds per
    epoch, with its 95% Student's t band (``seeds.curve_band``)."""
    groups = [g for g in groups if len(g.runs) >= 2 and any(g.runs[0].families.get(t) == "probing"
                                                            for t in g.runs[0].curves)]
    if not groups:
        return False
    plt, fig, axes = _epoch_panels(len(groups))
    for ax, group in zip(axes.flat, groups):
        for task in sorted(t for t in group.runs[0].curves if group.runs[0].families.get(t) == "probing"):
            band = curve_band(group, task)
            if not band:
                continue
            epochs = sorted(band)
            means = [band[e][0] for e in epochs]
            line, = ax.plot(epochs, means, marker="o", markersize=3, label=task)
            ax.fill_between(epochs, [band[e][2] for e in epochs], [band[e][3] for e in epochs],
                            color=line.get_color(), alpha=0.2, linewidth=0)
        _label_epoch_panel(ax, f"{group.name} ({len(group.runs)} seeds)")
    _hide_unused(fig, axes, len(groups))
    _suptitle(fig, "Probing accuracy per epoch: mean over training seeds, 95% Student's t band")
    _save(fig, path)
    plt.close(fig)
    return True


def plot_probing_layers(runs: list[Run], path: Path) -> bool:
    """Where a property is held and when it appears: per run (a row) and task (a column), a heatmap of the score of
    each layer (y, 0 = word vectors) after each epoch (x) of the runs that scored layers (``layers=true``); one
    colour scale per task, so that runs compare on it."""
    runs = [r for r in runs if r.layers]
    tasks = [t for t in task_names(runs) if any(t in r.layers for r in runs)]
    if not runs or not tasks:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(len(runs), len(tasks), figsize=(2.8 * len(tasks) + 1, 2.0 * len(runs) + 0.8),
                             squeeze=False, layout="constrained")
    for column, task in enumerate(tasks):
        values = [v for r in runs for scores in r.layers.get(task, {}).values() for v in scores.values()]
        low, high = min(values), max(values)
        for row, run in enumerate(runs):
            ax = axes[row][column]
            layers = run.layers.get(task, {})
            if not layers:
                ax.set_visible(False)
                continue
            epochs = sorted({e for scores in layers.values() for e in scores})
            grid = np.full((max(layers) + 1, len(epochs)), np.nan)
            for k, scores in layers.items():
                for i, epoch in enumerate(epochs):
                    grid[k, i] = scores.get(epoch, np.nan)
            image = ax.imshow(grid, origin="lower", aspect="auto", vmin=low, vmax=high, cmap="viridis")
            ax.set_xticks(range(len(epochs)), [str(e) for e in epochs], fontsize=6)
            ax.set_yticks(range(grid.shape[0]), [str(k) for k in range(grid.shape[0])], fontsize=6)
            if row == 0:
                ax.set_title(task, fontsize=8)
            if column == 0:
                ax.set_ylabel(f"{_wrapped(run.name, 24)}\nlayer", fontsize=7)
            if row == len(runs) - 1:
                ax.set_xlabel("epoch", fontsize=7)
            if row == 0:
                bar = fig.colorbar(image, ax=[axes[r][column] for r in range(len(runs))], shrink=0.8, pad=0.02)
                bar.ax.tick_params(labelsize=6)
    _suptitle(fig, "Score per layer (0 = pooled word vectors) and epoch; one colour scale per task", fontsize=9)
    _save(fig, path)
    plt.close(fig)
    return True


def plot_probing_measures(runs: list[Run], path: Path) -> bool:
    """Per run, selectivity and online codelength of each probing task against epochs, when the runs measured them
    (``callbacks.eval_suite.params.controls=true`` / ``mdl=true``)."""
    runs = [r for r in runs if r.measures]
    if not runs:
        return False
    plt = _pyplot()
    kinds = [("selectivity", "selectivity (accuracy - control, points)"), ("mdl_kbits", "online codelength (kbits)")]
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.6 * len(runs)), squeeze=False, layout="constrained")
    for row, run in zip(axes, runs):
        for ax, (kind, label) in zip(row, kinds):
            for task, points in sorted(run.measures.get(kind, {}).items()):
                epochs = sorted(points)
                probe = run.probes.get(task, "").split(",")[0]
                ax.plot(epochs, [points[e] for e in epochs], marker="o", label=f"{task} ({probe})" if probe else task)
            ax.set_title(_wrapped(f"{run.name}: {label}", 40), fontsize=9)
            ax.set_xlabel("epoch (0 = untrained)")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
    _outside_legend(fig, list(axes.flat))
    _suptitle(fig, "Controls (Hewitt & Liang 2019) and MDL (Voita & Titov 2020) per epoch")
    _save(fig, path)
    plt.close(fig)
    return True


def spearman_with_p(a: list[float], b: list[float]) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value: exact over every permutation for up to 8 runs (scipy's
    t-approximation calls rho = 1 on 3 runs "p = 0"; the exact value is 1/3), scipy's beyond."""
    rho = float(spearmanr(a, b).statistic)
    if len(a) > 8:
        return rho, float(spearmanr(a, b).pvalue)
    ra, rb = rankdata(a), rankdata(b)
    rhos = [float(np.corrcoef(ra, np.asarray(p))[0, 1]) for p in permutations(rb)]
    return rho, float(np.mean([abs(r) >= abs(rho) - 1e-12 for r in rhos]))


def correlation_matrix(runs: list[Run]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Spearman correlations across runs (final scores) between probing tasks (rows) and downstream tasks
    (columns), with their p-values; a pair needs at least 3 runs that have both scores."""

    runs = [r for r in runs if not r.reference]
    tasks = task_names(runs)
    families = {t: f for r in runs for t, f in r.families.items()}
    probing = [t for t in tasks if families[t] == "probing"]
    downstream = [t for t in tasks if families[t] != "probing"]
    rho = np.full((len(probing), len(downstream)), np.nan)
    pval = np.full_like(rho, np.nan)
    for i, p in enumerate(probing):
        for j, d in enumerate(downstream):
            finals = [(r.final(p), r.final(d)) for r in runs]
            pairs = [(a, b) for a, b in finals if a is not None and b is not None]
            if len(pairs) >= 3 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1:
                rho[i, j], pval[i, j] = spearman_with_p([a for a, _ in pairs], [b for _, b in pairs])
    return probing, downstream, rho, pval


def plot_correlations(runs: list[Run], path: Path, alpha: float = 0.05) -> bool:
    probing, downstream, rho, pval = correlation_matrix(runs)
    if not probing or not downstream or np.isnan(rho).all():
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(downstream), 1.0 + 0.5 * len(probing)), layout="constrained")
    image = ax.imshow(rho, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(len(probing)):
        for j in range(len(downstream)):
            if np.isnan(rho[i, j]):
                continue
            weak = pval[i, j] >= alpha
            ax.text(j, i, f"{rho[i, j]:.2f}" + ("\n(n.s.)" if weak else ""), ha="center", va="center", fontsize=7,
                    color="grey" if weak else "black")
    ax.set_xticks(range(len(downstream)), downstream, rotation=90, fontsize=8)  # upright names' boxes never meet
    ax.set_yticks(range(len(probing)), probing, fontsize=8)
    fig.colorbar(image, ax=ax, label="Spearman correlation across runs")
    ax.set_title(_wrapped(f"Probing vs downstream across {len(runs)} runs (n.s.: p >= {alpha}; cf. Conneau et al. "
                          "2018, Figure 2)", max(30, 10 * len(downstream))), fontsize=9)
    _save(fig, path)
    plt.close(fig)
    return True


def plot_losses(runs: list[Run], path: Path) -> bool:
    runs = [r for r in runs if r.loss]
    if not runs:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for run in runs:
        ax.plot([s for s, _ in run.loss], [v for _, v in run.loss], label=run.name, linewidth=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    _outside_legend(fig, [ax])
    _save(fig, path)
    plt.close(fig)
    return True
