"""The engine's result for a task, as SentEval's task module returns it (its keys, nothing else)."""
from __future__ import annotations

from evaluation.tasks.registry import TaskSpec

__all__ = ["KEYS", "senteval_result"]

# The keys of each task module's return value (senteval/*.py at 5d6dc11)
KEYS = {
    "accuracy": ("devacc", "acc", "ndev", "ntest"),
    "MRPC": ("devacc", "acc", "f1", "ndev", "ntest"),
    "relatedness": ("devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"),
}


def senteval_result(spec: TaskSpec, result: dict) -> dict:
    """Accuracy tasks: devacc, acc, ndev, ntest (MRPC: f1 too); SICK-R and STS-B: devpearson, pearson, spearman,
    mse, yhat, ndev, ntest; STS12-16: per sub-dataset ``{'pearson': (r, p), 'spearman': (r, p), 'nsamples'}`` and
    ``all`` (means of the correlations, plain and weighted by pairs)."""
    if spec.regime == "cosine":
        return {name: value for name, value in result.items() if name != "pooled"}
    keys = KEYS.get(spec.name) or KEYS["relatedness" if spec.regime == "relatedness" else "accuracy"]
    return {key: result[key] for key in keys}
