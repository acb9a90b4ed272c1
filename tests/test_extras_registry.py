"""The registry of optional extras (tests/helpers/extras.py) agrees with pyproject's extras, and a missing module
of an absent extra skips naming it while any other import error still fails."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pytest.outcomes import Skipped

from tests.helpers.extras import EXTRAS, extra_providing, skip_when_an_extra_is_missing

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (requires-python): tomllib's own code, the package tomli, which pytest depends on there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
EXTRAS_IN_PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_every_extra_of_pyproject_but_the_test_tools_is_in_the_registry():
    assert {extra.pyproject for extra in EXTRAS.values()} == set(EXTRAS_IN_PYPROJECT) - {"test"}


def test_the_install_commands_name_files_and_extras_that_exist():
    for name, extra in EXTRAS.items():
        target = extra.install.split()[-1]
        assert (ROOT / target).is_file() or target == f".[{extra.pyproject}]", (name, extra.install)


def test_each_extras_requirements_file_installs_its_extra_and_pins_nothing_itself():
    """The pins live in pyproject's extras alone: ``requirements-<extra>.txt`` is ``-e .[<extra>]`` and comments,
    one file per extra that requirements.txt does not already install."""
    files = {p.name.removeprefix("requirements-").removesuffix(".txt"): p for p in ROOT.glob("requirements-*.txt")
             if p.name != "requirements-neighbours.txt"}  # not ours: the packages our names must not shadow
    installed_by_requirements = {"sweeps", "test"}
    assert set(files) == set(EXTRAS_IN_PYPROJECT) - installed_by_requirements
    for extra, path in files.items():
        lines = [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
        assert lines == [f"-e .[{extra}]"], (path.name, lines)
    requirements = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
                    if line.strip() and not line.startswith("#")]
    assert requirements == [f"-e .[{','.join(sorted(installed_by_requirements))}]"]


def test_an_import_error_of_an_absent_extra_skips_naming_it(monkeypatch):
    monkeypatch.setitem(EXTRAS, "mlflow", EXTRAS["mlflow"].__class__("trackers", ("surely_not_installed_mlflow",),
                                                                     "pip install -r requirements-trackers.txt"))
    for err in (ModuleNotFoundError("No module named 'surely_not_installed_mlflow'",
                                    name="surely_not_installed_mlflow"),
                RuntimeError("wrapped"),
                ModuleNotFoundError("Requirement 'surely-not-installed-mlflow>=1.0.0' not met")):
        if isinstance(err, RuntimeError):  # Hydra's InstantiationException wraps the import error
            err.__cause__ = ModuleNotFoundError(name="surely_not_installed_mlflow")
        with pytest.raises(Skipped, match="optional extra 'mlflow' not installed .*requirements-trackers.txt"):
            with skip_when_an_extra_is_missing():
                raise err


def test_a_missing_module_no_extra_provides_still_fails():
    with pytest.raises(ModuleNotFoundError):
        with skip_when_an_extra_is_missing():
            raise ModuleNotFoundError("No module named 'typo_in_a_target'", name="typo_in_a_target")
    with pytest.raises(ValueError):
        with skip_when_an_extra_is_missing():
            raise ValueError("not an import error")
    assert extra_providing("hydra_plugins.hydra_joblib_launcher.config") == "sweeps-joblib"
    assert extra_providing("mlflow.tracking") == "mlflow"
    assert extra_providing("hydra_plugins") is None and extra_providing("mlflowish") is None
