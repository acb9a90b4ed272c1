"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: ``lint-imports`` finds no broken contract."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e .[test])")
    out = processes.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "0 broken" in out.stdout
