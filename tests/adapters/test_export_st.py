"""tools.export_st without the sentence-transformers extra: one line naming the install command."""
from __future__ import annotations

import sys

import pytest

from tests.helpers import processes

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

CODE = """import sys
sys.modules["sentence_transformers"] = None  # as if the extra were not installed
from sentence_lab.adapters.export_st import main

main(["ckpt_path=run", "out=exported"])
"""


def test_without_the_extra_the_command_says_what_to_install():
    done = processes.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: exporting needs sentence-transformers")
    assert "requirements-sentence-transformers.txt" in line
