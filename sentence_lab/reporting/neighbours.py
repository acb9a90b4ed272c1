"""Nearest neighbours: each run's closest sentences to a few queries in a pool (Logeswaran & Lee 2018, Table 5)."""
from __future__ import annotations

import numpy as np

from sentence_lab.adapters.trained import load_checkpoint_encoder
from sentence_lab.home import ASSETS
from sentence_lab.reporting.runs import Run
from sentence_lab.text.documents import list_documents, read_document, split_sentences

QUERIES = ("He looked at her and smiled.", "The rain had not stopped for three days.",
           "I do not know what you mean.", "She opened the door and walked in.", "What is the matter with you?")


def default_pool(limit: int = 3000) -> list[str]:
    """Sentences of the shipped validation books."""
    root = ASSETS / "books" / "valid"
    pool: list[str] = []
    for doc in list_documents(root):
        pool += [s for s in split_sentences(read_document(doc)) if 4 <= len(s.split()) <= 30]
    return list(dict.fromkeys(pool))[:limit]


def neighbours(runs: list[Run], queries: list[str], pool: list[str], k: int = 3) -> str:
    """Each run's ``k`` nearest pool sentences (cosine) to each query, from its best checkpoint."""
    lines = ["# Nearest neighbours", "",
             f"Pool: {len(pool)} sentences; cosine similarity of each run's best checkpoint.",
             ""]
    for run in runs:
        try:
            model, _ = load_checkpoint_encoder(str(run.path), vocab_expansion=True)
        except (FileNotFoundError, ValueError) as err:
            lines += [f"## {run.name}", "", f"no checkpoint: {err}", ""]
            continue
        unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # noqa: E731
        pool_vectors, query_vectors = unit(model.encode(pool)), unit(model.encode(queries))
        lines += [f"## {run.name}", ""]
        for query, sims in zip(queries, query_vectors @ pool_vectors.T):
            top = np.argsort(-sims)[:k]
            lines.append(f"- **{query}**")
            lines += [f"  - {pool[i]} ({sims[i]:.3f})" for i in top]
        lines.append("")
    return "\n".join(lines) + "\n"
