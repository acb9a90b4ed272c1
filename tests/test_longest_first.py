"""tests/helpers/longest_first.py: the order xdist hands tests out in, longest first, a module's shared fixture kept
together."""
from __future__ import annotations

import json
from types import SimpleNamespace

from tests.helpers.longest_first import UNKNOWN_S, longest_first, read_durations


def item(nodeid: str, module_fixture: bool = False) -> SimpleNamespace:
    scope = "module" if module_fixture else "function"
    return SimpleNamespace(nodeid=nodeid, _fixtureinfo=SimpleNamespace(
        name2fixturedefs={"f": [SimpleNamespace(scope=scope)]}))


def test_the_longest_come_first_and_an_unknown_test_counts_as_unknown_s():
    items = [item("a.py::quick"), item("a.py::long"), item("b.py::new"), item("b.py::medium")]
    seconds = {"a.py::quick": 0.1, "a.py::long": 90.0, "b.py::medium": UNKNOWN_S + 1}
    assert [i.nodeid for i in longest_first(items, seconds)] == ["a.py::long", "b.py::medium", "b.py::new",
                                                                 "a.py::quick"]


def test_a_modules_tests_that_share_a_module_fixture_stay_together_placed_by_their_longest():
    items = [item("w.py::one", True), item("w.py::two", True), item("x.py::alone"), item("w.py::three", True)]
    seconds = {"w.py::one": 1.0, "w.py::two": 50.0, "w.py::three": 2.0, "x.py::alone": 10.0}
    assert [i.nodeid for i in longest_first(items, seconds)] == ["w.py::one", "w.py::two", "w.py::three",
                                                                 "x.py::alone"]


def test_the_file_is_read_as_seconds_by_test_id(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"t.py::a": 1, "t.py::b[x y]": 2.5}))
    assert read_durations(path) == {"t.py::a": 1.0, "t.py::b[x y]": 2.5}
    assert read_durations(tmp_path / "none.json") == {}
