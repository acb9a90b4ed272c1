"""SentEval's own outputs for ``bow_glove`` (facebookresearch/SentEval at 5d6dc11, on CPU; its ``what`` field says how
they were made), shipped with the tests so no test reads a file from beside ``SENTENCE_DATA``."""
from __future__ import annotations

import json
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "senteval-reference-scores.json"


def senteval_reference() -> dict:
    """The reference scores: ``{set: {"params": ..., "by_seed": {seed: {task: result}}}}``."""
    return json.loads(REFERENCE.read_text(encoding="utf-8"))
