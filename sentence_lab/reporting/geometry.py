"""The report's view of each evaluation's layer geometry (``callbacks.eval_suite.geometry``): a layer x epoch heat map
of every layer's linear CKA to epoch 0 beside each run's alignment and uniformity, and the between-seeds table (each
layer's CKA between the last evaluations of runs that differ only in their seed, on the same sample)."""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np

from sentence_lab.evaluation.geometry.cka import linear_cka
from sentence_lab.evaluation.geometry.tracking import read_layers
from sentence_lab.reporting.figures import _pyplot, _save, _suptitle, _wrapped
from sentence_lab.reporting.runs import Run
from sentence_lab.reporting.seeds import group_by_seed


def plot_layer_geometry(runs: list[Run], path: Path) -> bool:
    """Per run (a row): CKA of each layer (y, 0 = pooled input vectors) to epoch 0 after each epoch (x), on one
    0-1 colour scale, and alignment / uniformity against epochs. False (nothing drawn) without geometry."""
    runs = [r for r in runs if r.cka]
    if not runs:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(len(runs), 2, figsize=(9, 2.3 * len(runs) + 0.8), squeeze=False, layout="constrained",
                             gridspec_kw={"width_ratios": [3, 2]})
    image = None
    for row, run in enumerate(runs):
        epochs = sorted({e for scores in run.cka.values() for e in scores})
        grid = np.full((max(run.cka) + 1, len(epochs)), np.nan)
        for k, scores in run.cka.items():
            for i, epoch in enumerate(epochs):
                grid[k, i] = scores.get(epoch, np.nan)
        ax = axes[row][0]
        image = ax.imshow(grid, origin="lower", aspect="auto", vmin=0.0, vmax=1.0, cmap="magma")
        for (k, i), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(i, k, f"{value:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if value < 0.6 else "black")
        ax.set_xticks(range(len(epochs)), [str(e) for e in epochs], fontsize=6)
        ax.set_yticks(range(grid.shape[0]), [str(k) for k in range(grid.shape[0])], fontsize=6)
        ax.set_ylabel(f"{_wrapped(run.name, 28)}\nlayer", fontsize=7)
        right = axes[row][1]
        for name, style in (("alignment", "o-"), ("uniformity", "s--")):
            curve = run.geometry.get(name, {})
            if curve:
                right.plot(sorted(curve), [curve[e] for e in sorted(curve)], style, label=name, markersize=3)
        right.tick_params(labelsize=6)
        right.legend(fontsize=6)
        if row == 0:
            ax.set_title("linear CKA to epoch 0", fontsize=8)
            right.set_title("alignment and uniformity (lower: closer, more uniform)", fontsize=8)
        if row == len(runs) - 1:
            ax.set_xlabel("epoch", fontsize=7)
            right.set_xlabel("epoch", fontsize=7)
    if image is not None:
        fig.colorbar(image, ax=[axes[r][0] for r in range(len(runs))], shrink=0.8, pad=0.02).ax.tick_params(labelsize=6)
    _suptitle(fig, "What training did to each layer: CKA to the model at epoch 0; the top layer's geometry", 9)
    _save(fig, path)
    plt.close(fig)
    return True


def last_layers(run: Run) -> tuple[str, list[np.ndarray]] | None:
    """The sample's SHA-256 and the layers' vectors of a run's last evaluation with geometry, if kept."""
    section = run.last_results.get("geometry") if run.last_results else None
    folder = run.path / "eval" / "geometry"
    files = sorted(folder.glob("epoch_[0-9][0-9][0-9].npz")) if folder.is_dir() else []
    if not isinstance(section, dict) or "sample" not in section or not files:
        return None
    return str(section["sample"]["sha256"]), read_layers(files[-1])


def seeds_cka_table(runs: list[Run]) -> str:
    """Markdown: per configuration of two seeds or more, each layer's CKA between the seeds' last evaluations (mean
    and range over the pairs of seeds); runs measured on different samples are left out. Empty when none."""
    lines: list[str] = []
    for group in group_by_seed(runs):
        measured = [m for m in (last_layers(r) for r in group.runs) if m is not None]
        if len(measured) < 2 or len({sha for sha, _ in measured}) != 1:
            continue
        depth = min(len(layers) for _, layers in measured)
        per_layer = [[linear_cka(a[k], b[k]) for (_, a), (_, b) in combinations(measured, 2)] for k in range(depth)]
        if not lines:
            lines += ["## Layers between seeds", "",
                      "Linear CKA of each layer between runs that differ only in their seed (their last evaluation, "
                      "the same sentence sample): 1 = the same representation up to rotation and scale.", "",
                      "| configuration | seeds | " + " | ".join(f"layer {k}" for k in range(depth)) + " |",
                      "|---|---|" + "---|" * depth]
        cells = [f"{np.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})" for v in per_layer]
        lines.append(f"| {group.name} | {len(measured)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if lines else ""
