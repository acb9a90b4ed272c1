"""The engine's result for a task, as SentEval's task module returns it (its keys, nothing else)."""
from __future__ import annotations

from sentence_lab.tasks.registry import TaskSpec

__all__ = ["KEYS", "senteval_result"]

# The keys of each task module's return value (senteval/*.py at 5d6dc11)
KEYS = {
    "accuracy": ("devacc", "acc", "ndev", "ntest"),
    "MRPC": ("devacc", "acc", "f1", "ndev", "ntest"),
    "relatedness": ("devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"),
}


def senteval_result(spec: TaskSpec, result: dict, cosine: dict | None = None) -> dict:
    """Accuracy tasks: devacc, acc, ndev, ntest (MRPC: f1 too); SICK-R and STS-B: devpearson, pearson, spearman,
    mse, yhat, ndev, ntest; STS12-16: per sub-dataset ``{'pearson': (r, p), 'spearman': (r, p), 'nsamples'}`` (scipy's
    results) and ``all`` (means of the correlations, plain and weighted by pairs).

    Added for clients of SimCSE's fork, which read them: ``all.pearson.all`` and ``all.spearman.all`` (the
    correlations over every pair of the task pooled), and for SICK-R and STS-B the cosine scores of each split
    (``cosine``: ``train``, ``dev``, ``test``, each as an STS sub-dataset)."""
    if spec.regime == "cosine":
        out = {name: value for name, value in result.items() if name not in ("pooled", "items")}
        out["all"] = {corr: {**out["all"][corr], "all": result["pooled"][corr]} for corr in ("pearson", "spearman")}
        return out
    keys = KEYS.get(spec.name) or KEYS["relatedness" if spec.regime == "regression" else "accuracy"]
    out = {key: result[key] for key in keys}
    if cosine is not None:
        out.update({split: cosine[split] for split in ("train", "dev", "test") if split in cosine})
    return out
