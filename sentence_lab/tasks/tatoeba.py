"""Translation retrieval's pairs: Tatoeba's English and another language, the pairs training holds out.

``parallel/tatoeba/en-<language>.tsv`` under the data root (English in the first column), read as the training data
reads it (``sentence_lab.text.pair_files``, empty sides dropped), and the pairs drawn by
``sentence_lab.text.held_out.hold_out`` with the seed every training run uses: a model trained on the same file with
``data.retrieval_held_out`` of the same size never saw them (``data=tatoeba_*`` hold out 1,000). Not LASER's official
Tatoeba test set: its figures are not comparable with LASER's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sentence_lab.tasks.base import MissingTaskData, TaskDataError
from sentence_lab.text.held_out import RETRIEVAL_SEED, hold_out
from sentence_lab.text.pair_files import read_pairs

RETRIEVAL_TASK = "Tatoeba"
RETRIEVAL_SIZE = 1000  # what data=tatoeba_* hold out (their retrieval_held_out)
NOT_COMPARABLE = ("pairs held out of the training file (seed 1111), not LASER's Tatoeba test set: not comparable with "
                  "LASER's figures")


@dataclass(frozen=True)
class RetrievalPairs:
    """Held-out translations: ``first[i]`` (English) and ``other[i]`` (``language``) are a pair."""

    first: list[str]
    other: list[str]
    language: str
    info: dict


def tatoeba_path(data_dir: Path | str, language: str) -> Path:
    return Path(data_dir) / "parallel" / "tatoeba" / f"en-{language}.tsv"


def load_retrieval_pairs(data_dir: Path | str, language: str, size: int = RETRIEVAL_SIZE,
                         path: Path | str | None = None) -> RetrievalPairs:
    """``size`` held-out pairs of English and ``language`` from ``path`` (default: the data root's Tatoeba file);
    ``MissingTaskData`` when there is no file, ``TaskDataError`` (one line) when it cannot spare ``size`` pairs."""
    path = Path(path) if path is not None else tatoeba_path(data_dir, language)
    if not path.is_file():
        raise MissingTaskData(RETRIEVAL_TASK, path, "translation retrieval reads Tatoeba's en-<language>.tsv: point "
                              "SENTENCE_DATA / paths.data_dir at a data root that holds parallel/tatoeba/")
    pairs = [(a, b) for a, b, _ in read_pairs({"format": "tsv", "path": str(path), "a": 0, "b": 1})]
    try:
        held = hold_out(pairs, int(size), RETRIEVAL_SEED)
    except ValueError as err:
        raise TaskDataError(f"{RETRIEVAL_TASK} ({path}): {err}") from None
    info = {"file": str(path), "held_out": len(held.pairs), "seed": RETRIEVAL_SEED, "pairs_in_file": len(pairs),
            "unique_pairs": held.unique_pairs, "candidates": held.candidates, "note": NOT_COMPARABLE}
    return RetrievalPairs([a for a, _ in held.pairs], [b for _, b in held.pairs], language, info)
