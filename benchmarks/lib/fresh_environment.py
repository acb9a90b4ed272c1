"""A new virtual environment holding a built wheel alone, and what an installed command must not see of the clone
it was built from (``tests/test_packaging.py``, ``benchmarks/fault_drills.py``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# What an installed command must not see of the clone it was built from (tests/test_packaging.py, the fault drills).
CLONE_VARIABLES = ("PROJECT_ROOT", "SENTENCE_DATA", "SENTENCE_CACHE", "SENTENCE_LAB_HOME", "PYTHONPATH")


def fresh_environment_with(wheel: Path, where: Path) -> Path:
    """A new virtual environment at ``where`` holding ``wheel`` alone (its console scripts in ``where/bin``); the
    dependencies are read from this interpreter's site-packages, appended to its path, so no editable hook of the
    clone is active there. Returns its site-packages folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_dependencies.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    return site


def files_under(folder: Path) -> set[str]:
    """Every file below ``folder`` (compiled ``__pycache__`` aside), relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
