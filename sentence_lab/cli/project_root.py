"""Where a command writes: the repository it runs from, or, installed, the directory it is run in.

A clone of the repository is known by its marker file (``.project-root`` at its top, which no wheel ships); there
the runs, the corpus cache and the default data folder lie under the repository, as they always have. Installed
(``pip install .``: the code lies in a ``site-packages`` folder, even one inside a clone's ``.venv``), the commands
write under the directory they are run from, as Hydra's own ``outputs/`` and MLflow's ``mlruns/`` do.
``PROJECT_ROOT`` (and ``paths.*``) set by hand win in both cases. The configs and the shipped assets are read from
beside the code either way (``SENTENCE_LAB_HOME``: the repository, or ``site-packages/sentence_lab``)."""
from __future__ import annotations

import os
from pathlib import Path

from sentence_lab.home import HOME

MARKER = ".project-root"
INSTALLED_UNDER = ("site-packages", "dist-packages")


def clone_root(code: Path = Path(__file__)) -> Path | None:
    """The repository clone ``code`` runs from (the nearest folder above it holding the marker); None when the code
    is installed."""
    here = Path(code).resolve()
    if any(part in INSTALLED_UNDER for part in here.parts):
        return None
    return next((folder for folder in here.parents if (folder / MARKER).is_file()), None)


def set_project_root() -> None:
    """``PROJECT_ROOT`` (where runs, caches and the default data folder go) and ``SENTENCE_LAB_HOME`` (where the
    configs and shipped assets are), unless already set."""
    os.environ.setdefault("PROJECT_ROOT", str(clone_root() or Path.cwd()))
    os.environ.setdefault("SENTENCE_LAB_HOME", str(HOME))
