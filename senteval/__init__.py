"""SentEval's API (``senteval.engine.SE``) over sentence-lab's evaluation engine.

A SentEval client runs unchanged: ``sys.path.insert(0, PATH_TO_SENTEVAL); import senteval;
senteval.engine.SE(params, batcher, prepare).eval([...])`` with ``PATH_TO_SENTEVAL`` at this repository (or
with the project installed). ``senteval.IMPLEMENTATION`` says which SentEval was imported; importing this one
while another SentEval is also on ``sys.path`` warns, naming both (docs/senteval-api.md).

This package imports the engine (``evaluation``, ``text``) and the numeric libraries only: no Lightning, Hydra
or training code.
"""
from __future__ import annotations

from . import engine, utils
from .coexistence import warn_if_shadowing
from .engine import SE

__all__ = ["SE", "engine", "utils", "IMPLEMENTATION"]

IMPLEMENTATION = "sentence-lab"

warn_if_shadowing()
