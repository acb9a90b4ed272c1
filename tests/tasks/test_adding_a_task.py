"""docs/adding-a-task.md, followed step by step: its loader, as written there, and a TaskSpec run by the engine."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.runner import LoadedTask, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.tasks.registry import TaskSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-task.md"


def doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_recipe_runs(tmp_path, hash_encoder):
    loader_source, registry_line = doc_blocks()
    namespace: dict = {}
    exec(loader_source, namespace)  # noqa: S102 - the doc's own code, as a reader would paste it
    root = tmp_path / "data" / "senteval" / "QUESTIONS"
    root.mkdir(parents=True)
    for split, n in (("train", 40), ("dev", 12), ("test", 12)):
        rows = [("why is the sky blue ?" if i % 2 else "the sky is blue .") + " " + "word " * (i % 5) + f"\t{i % 2}"
                for i in range(n)]
        (root / f"{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    data = namespace["load_questions"](tmp_path / "data")
    assert [len(data.splits[s]) for s in ("train", "dev", "test")] == [40, 12, 12]
    lengths = [len(s.split()) for s in data.splits["train"].a]
    assert lengths == sorted(lengths)  # int_split sorted it as SentEval does

    spec = eval(registry_line.strip().rstrip(","), {"TaskSpec": TaskSpec,  # noqa: S307 - the doc's line
                                                    "questions": type("m", (), {"load_questions":
                                                                                namespace["load_questions"]})})
    result = run_task(LoadedTask(spec, data=data), EmbeddingCache(hash_encoder), ProtocolParams(l2_grid=(1e-5,)))
    assert result["main_metric"] == "acc" and result["acc"] == 100.0  # the question mark gives the label away
    assert np.isclose(result["main_score"], result["acc"])
