"""Amnesic probing (Elazar et al. 2021): does the encoder's use of its vectors need what a probe reads from them?

Iterative nullspace projection (INLP; Ravfogel et al. 2020, section 3): train a linear probe for the property,
remove the directions its weights span (project the vectors on their orthogonal complement), train a fresh probe on
the projected vectors, and repeat until the fresh probe scores within ``tolerance`` points of the majority on the
dev split. The transfer and similarity tasks are then scored on the projected vectors; the control removes as many
random directions (Elazar et al., section 4: a drop is the property's only where the random removal costs less).

Probes here are scikit-learn's multinomial logistic regression on standardised features (a fixed, strong linear
probe: the removal must not depend on how well a probe was tuned); accuracies in %.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from sentence_lab.evaluation.probing.floors import majority_accuracy
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import task_params
from sentence_lab.evaluation.runner import LoadedTask, score
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.tasks.registry import get_path

TOLERANCE = 2.0  # points above the majority at which the property counts as removed
MAX_ITERATIONS = 100
PROBE_C = 1.0


@dataclass
class Nullspace:
    """The projection that removes a property: ``x @ projection``; ``directions`` removed (its rank deficit)."""

    projection: np.ndarray
    directions: int
    iterations: int
    dev_accuracy: list[float] = field(default_factory=list)  # the fresh probe's, before each removal, then after all
    majority: float = 0.0
    removed: bool = False  # the last probe reached majority + tolerance (False: the iteration cap or all dimensions)
    seconds: float = 0.0

    def describe(self) -> dict:
        return {"directions": self.directions, "iterations": self.iterations, "removed": self.removed,
                "dev_accuracy": [round(a, 2) for a in self.dev_accuracy], "majority": round(self.majority, 2),
                "seconds": round(self.seconds, 2)}


def _probe(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[LogisticRegression, np.ndarray, np.ndarray]:
    """A logistic probe on standardised features; with the mean and scale it used."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-12] = 1.0  # a removed direction's coordinates carry nothing; keep them as they are
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=PROBE_C, max_iter=300, random_state=seed).fit((x - mean) / scale, y)
    return model, mean, scale


def probe_accuracy(xtr: np.ndarray, ytr: np.ndarray, xev: np.ndarray, yev: np.ndarray, seed: int = 1111) -> float:
    """A fresh linear probe trained on (xtr, ytr), its accuracy on (xev, yev), in %."""
    if len(np.unique(ytr)) < 2:
        return majority_accuracy(ytr, yev)
    model, mean, scale = _probe(xtr, ytr, seed)
    return 100.0 * float(np.mean(model.predict((xev - mean) / scale) == yev))


def _orthonormal(rows: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the span of ``rows``."""
    u, s, _ = np.linalg.svd(rows.T, full_matrices=False)
    return u[:, s > s.max(initial=0.0) * 1e-10]


def inlp(xtr: np.ndarray, ytr: np.ndarray, xdev: np.ndarray, ydev: np.ndarray, tolerance: float = TOLERANCE,
         max_iterations: int = MAX_ITERATIONS, seed: int = 1111) -> Nullspace:
    """The nullspace projection of the property (ytr) in the vectors (xtr): directions removed until a fresh probe
    on the projected dev vectors scores within ``tolerance`` points of the majority."""
    started = time.perf_counter()
    xtr, xdev = np.asarray(xtr, dtype=np.float64), np.asarray(xdev, dtype=np.float64)
    dim = xtr.shape[1]
    majority = majority_accuracy(ytr, ydev)
    basis = np.zeros((dim, 0))
    projection = np.eye(dim)
    accuracies: list[float] = []
    iterations = 0
    while True:
        model, mean, scale = _probe(xtr @ projection, ytr, seed)
        accuracy = 100.0 * float(np.mean(model.predict((xdev @ projection - mean) / scale) == ydev))
        accuracies.append(accuracy)
        if accuracy <= majority + tolerance or iterations >= max_iterations or basis.shape[1] >= dim:
            break
        # the probe's weights, back in the vectors' own coordinates (the probe saw standardised ones), projected so
        # that only directions not removed yet are added
        weights = (model.coef_ / scale) @ projection
        basis = _orthonormal(np.concatenate([basis.T, weights]))
        projection = np.eye(dim) - basis @ basis.T
        iterations += 1
    return Nullspace(projection=projection, directions=int(basis.shape[1]), iterations=iterations,
                     dev_accuracy=accuracies, majority=majority, removed=accuracies[-1] <= majority + tolerance,
                     seconds=time.perf_counter() - started)


def random_nullspace(dim: int, directions: int, seed: int = 1111) -> np.ndarray:
    """The control: the projection that removes ``directions`` random orthonormal directions."""
    if directions <= 0:
        return np.eye(dim)
    basis, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, directions)))
    return np.eye(dim) - basis @ basis.T


def _main(spec, result: dict) -> float | None:
    value = get_path(result, spec.main_score)
    return round(float(value), 4) if isinstance(value, (int, float)) else None


def projected(embed: Callable[[list[str]], np.ndarray], projection: np.ndarray) -> Callable[[list[str]], np.ndarray]:
    """``embed`` followed by the projection (in the vectors' own dtype)."""
    def run(sentences: list[str]) -> np.ndarray:
        vectors = embed(sentences)
        return (vectors @ projection).astype(vectors.dtype, copy=False)
    return run


def amnesic_property(prop: LoadedTask, targets: Sequence[LoadedTask], cache: EmbeddingCache, params: ProtocolParams,
                     before: Mapping[str, float | None], seed: int = 1111) -> tuple[dict, dict[str, dict]]:
    """One property removed from ``cache``'s encoder (INLP on its task's train split, stopped on dev), and as many
    random directions (the control): the property's own probe on test, and every target task's main score, after
    each; ``before`` holds the targets' main scores on the intact vectors. Returns the results' entry and, per task,
    its per-item predictions after each (``{"after": pred, "control": pred}``, where its regime gives them) for the
    paired test of ``compare``."""
    started = time.perf_counter()
    assert prop.data is not None
    splits = prop.data.splits
    x = {name: np.asarray(cache.embed(splits[name].a), dtype=np.float64) for name in ("train", "dev", "test")}
    y = {name: np.asarray(splits[name].y) for name in ("train", "dev", "test")}
    removed = inlp(x["train"], y["train"], x["dev"], y["dev"], seed=seed)
    control = random_nullspace(x["train"].shape[1], removed.directions, seed=seed)
    probe = {"before": probe_accuracy(x["train"], y["train"], x["test"], y["test"], seed),
             "after": probe_accuracy(x["train"] @ removed.projection, y["train"], x["test"] @ removed.projection,
                                     y["test"], seed),
             "control": probe_accuracy(x["train"] @ control, y["train"], x["test"] @ control, y["test"], seed),
             "majority": majority_accuracy(y["train"], y["test"])}
    tasks: dict[str, dict] = {}
    preds: dict[str, dict] = {}
    for task in targets:
        assert task.data is not None
        run_params = task_params(task.spec, params)
        results = {name: score(task.spec, task.data, projected(cache.embed, projection), run_params)
                   for name, projection in (("after", removed.projection), ("control", control))}
        after, kept = _main(task.spec, results["after"]), _main(task.spec, results["control"])
        if all("items" in r for r in results.values()):
            preds[task.spec.name] = {name: r["items"]["pred"] for name, r in results.items()}
        was = before.get(task.spec.name)
        tasks[task.spec.name] = {"before": was, "after": after, "control": kept,
                                 "drop": None if was is None or after is None else round(was - after, 4),
                                 "control_drop": None if was is None or kept is None else round(was - kept, 4)}
    return {**removed.describe(), "probe": {k: round(v, 2) for k, v in probe.items()}, "tasks": tasks,
            "inlp_seconds": round(removed.seconds, 2), "seconds": round(time.perf_counter() - started, 2)}, preds


def amnesic_line(name: str, entry: Mapping) -> str:
    """The console's line for one removed property."""
    if "error" in entry:
        return f"amnesic {name}: failed: {entry['error']}"
    probe, tasks = entry["probe"], entry["tasks"]
    drops = [t["drop"] - t["control_drop"] for t in tasks.values() if t["drop"] is not None
             and t["control_drop"] is not None]
    mean = f"; mean drop beyond the control {sum(drops) / len(drops):+.2f} over {len(drops)} tasks" if drops else ""
    return (f"amnesic {name}: {entry['directions']} directions removed in {entry['iterations']} iterations "
            f"(probe {probe['before']:.2f} -> {probe['after']:.2f}, control {probe['control']:.2f}, majority "
            f"{probe['majority']:.2f}){mean} ({entry['seconds']:.1f}s)")
