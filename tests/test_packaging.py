"""A non-editable install (`pip install .`) carries what the README's commands need: every package, the entry
points, the Hydra configs and the shipped books and probing set, beside train.py and evaluate.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["text", "encoders", "objectives", "datamodules", "training", "evaluation", "adapters", "tools", "senteval"]


def test_the_wheel_holds_packages_configs_assets_and_commands(tmp_path):
    tree = tmp_path / "src"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "logs", "build", "*.egg-info",
                                                               "__pycache__", "tests", "benchmarks", "docs"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", ".", "--no-deps", "--no-build-isolation",
                           "-w", str(tmp_path / "dist")], cwd=tree, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"train.py", "evaluate.py", "report.py"} <= names
    assert {f"{p}/__init__.py" for p in PACKAGES} <= names
    configs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "conf").rglob("*.yaml")}
    assets = {p.relative_to(ROOT).as_posix() for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assert configs <= names and assets <= names, sorted((configs | assets) - names)[:5]
    entry_points = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for command in ("sentence-lab-train = train:main", "sentence-lab-eval = evaluate:main",
                    "sentence-lab-report = report:main", "sentence-lab-probing-gen = tools.probing_gen.__main__:main"):
        assert command in entry_points
