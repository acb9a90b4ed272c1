"""Code outside the project that a benchmark runs beside ours: SentEval's own package (``compare_senteval.py``,
``eval_speed.py --high-dim --reference``) and InferSent's training files (``infersent_nli.py``, which the GPU check
carries)."""
from __future__ import annotations

import sys
from pathlib import Path

# InferSent's files that benchmarks/infersent_nli.py runs (facebookresearch/InferSent before c752882, which removed
# them); the GPU check carries them when told where they are.
INFERSENT_FILES = ("train_nli.py", "data.py", "models.py", "mutils.py")


def use_senteval_checkout(folder: Path | str) -> Path:
    """Make ``import senteval`` find SentEval's own package in ``folder`` (a checkout or copy holding ``senteval/``)
    instead of this project's SentEval API: the one place a benchmark reaches code outside the installed project
    (``compare_senteval.py``, ``eval_speed.py --high-dim --reference``). Returns the folder."""
    folder = Path(folder).resolve()
    if not (folder / "senteval").is_dir():
        raise SystemExit(f"{folder} holds no senteval/ package: --reference names a SentEval checkout")
    for name in [m for m in sys.modules if m == "senteval" or m.startswith("senteval.")]:
        del sys.modules[name]  # this project's senteval, if imported already
    sys.path.insert(0, str(folder))
    return folder
