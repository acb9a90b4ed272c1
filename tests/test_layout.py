"""The house as static tools read it: every ``sentence_lab.*`` name is a file under ``sentence_lab/``, the tests are
one package (``tests.*``) whose helpers import the same way from any working directory, and ``import senteval`` in
a test is the project's SentEval API, never the ``tests/senteval`` folder."""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "sentence_lab"


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative imports resolved against its package."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def resolves_by_path(name: str) -> bool:
    """``a.b.c`` (a module, or a name defined in one) is a file or a package folder under the repository."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


@pytest.mark.slow
def test_every_project_import_is_a_file_a_reader_of_files_finds():
    """No import hook needed: each ``sentence_lab.*`` import of the packages, scripts and tests names a file."""
    unresolved = [f"{path.relative_to(ROOT)}:{line} {name}"
                  for folder in (PACKAGES, ROOT / "senteval", ROOT / "tests", ROOT / "benchmarks", ROOT / "scripts")
                  for path in python_files(folder) for line, name in imported_modules(path)
                  if name.startswith("sentence_lab.") and not resolves_by_path(name)]
    assert not unresolved, unresolved[:10]


def test_every_test_folder_is_a_package_so_no_folder_shadows_a_real_one():
    missing = [str(d.relative_to(ROOT)) for d in [ROOT / "tests", *(ROOT / "tests").rglob("*")]
               if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").is_file()]
    assert not missing, f"add an __init__.py to {missing}"


def test_tests_import_their_helpers_and_siblings_by_their_full_names():
    """``from tests.helpers.x import ...``; a bare ``helpers.x`` or ``test_x`` works only from one path setup."""
    bare = [f"{path.relative_to(ROOT)}:{line} {name}" for path in python_files(ROOT / "tests")
            for line, name in imported_modules(path)
            if name.split(".")[0] in ("helpers", "conftest") or name.split(".")[0].startswith("test_")]
    assert not bare, bare[:10]


@pytest.mark.slow
def test_a_test_using_helpers_and_senteval_runs_from_another_working_directory(tmp_path):
    """From a folder outside the checkout, pytest runs a senteval test (helpers, fixtures, ``import senteval``)."""
    done = processes.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "senteval" / "test_engine.py"), "-k", "params"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    # the path pytest.ini gives the tests: the checkout and benchmarks/ (the made-up trees' writers, benchmarks/lib)
    path = os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")])
    probe = processes.run([sys.executable, "-c", "import senteval, tests.helpers.senteval_tree as t; "
                            "print(senteval.__file__); print(t.__file__)"],
                           cwd=tmp_path, env={"PYTHONPATH": path, "PATH": ""}, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    api, helper = probe.stdout.split()
    assert Path(api) == ROOT / "senteval" / "__init__.py"
    assert Path(helper) == ROOT / "tests" / "helpers" / "senteval_tree.py"


def test_an_objectives_config_name_is_its_module_and_every_encoder_config_builds_an_encoder():
    """``objective=qt`` is ``sentence_lab/objectives/qt.py``; every ``encoder=`` builds a ``...Encoder``."""
    for config in sorted((ROOT / "conf" / "objective").glob("*.yaml")):
        target = yaml.safe_load(config.read_text())["_target_"]
        assert target.rsplit(".", 2)[-2] == config.stem, (config.name, target)
    for config in sorted((ROOT / "conf" / "encoder").glob("*.yaml")):
        target = (yaml.safe_load(config.read_text()) or {}).get("_target_")
        assert target is None or target.endswith("Encoder"), (config.name, target)
