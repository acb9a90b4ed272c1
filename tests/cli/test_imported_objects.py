"""Each command freezes the objects its imports made before it works (sentence_lab.cli.imported_objects)."""
from __future__ import annotations

import gc

import pytest

from sentence_lab.cli.imported_objects import freeze_imported_objects
from tests.helpers.in_process import run_main


def test_the_objects_alive_at_the_call_leave_the_collections_and_later_ones_do_not():
    assert gc.get_freeze_count() == 0
    try:
        alive = len(gc.get_objects())
        freeze_imported_objects()
        assert gc.get_freeze_count() >= alive
        later = [[]]
        assert gc.is_tracked(later) and later in gc.get_objects()  # a new object: collected as before
    finally:
        gc.unfreeze()


@pytest.mark.slow  # a command's start (Hydra's help) takes 1-2 s
@pytest.mark.parametrize("script,args", [("train.py", ["--help"]), ("evaluate.py", ["--help"]), ("report.py", [])])
def test_every_command_freezes_once_as_it_starts(script, args, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    done = run_main(script, args, cwd=tmp_path)
    assert calls == ["freeze"], done.stderr[-2000:]
