"""compare and the report print what removing a property did: before, after, control, the drop beyond the control,
and the paired test of the after-removal against the control predictions on the same items."""
from __future__ import annotations

import numpy as np

from sentence_lab.evaluation.probing import amnesic
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import read_items
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.reporting.amnesic import amnesic_rows, amnesic_table
from sentence_lab.reporting.compare import main as compare_main
from tests.helpers.hash_encoder import HashEncoder

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")


def _remove_half(xtr, ytr, xdev, ydev, **_):
    """A removal that costs the transfer task something: half the dimensions gone."""
    dim = xtr.shape[1]
    projection = np.diag([1.0] * (dim // 2) + [0.0] * (dim - dim // 2))
    return amnesic.Nullspace(projection=projection, directions=dim - dim // 2, iterations=1, removed=True)


def test_compare_prints_the_drop_beyond_the_control_with_its_paired_test(senteval_root, tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.setattr(amnesic, "inlp", _remove_half)
    out = tmp_path / "hash.json"
    doc = EvaluationSuite(["MR", "STS13"], senteval_root, FAST, amnesic=["Tense"]).run(HashEncoder(), out)
    items = read_items(out.with_suffix(".items.npz"))
    assert {"amnesic/Tense/after/pred", "amnesic/Tense/control/pred"} <= set(items["MR"])
    rows = {task: row for _, task, row in amnesic_rows(doc, items, resamples=200)}
    mr = rows["MR"]
    assert mr["beyond_control"] == (mr["before"] - mr["after"]) - (mr["before"] - mr["control"])
    assert abs(mr["difference"] - (mr["after"] - mr["control"])) < 0.01  # the test's difference is the scores'
    assert mr["low"] <= mr["difference"] <= mr["high"] and 0 <= mr["p"] <= 1
    assert compare_main([str(out), "--amnesic-resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "| hash: removed | task | before | after | control |" in printed
    assert f"| Tense ({doc['amnesic']['Tense']['directions']} directions) | MR |" in printed


def test_a_run_without_removals_prints_no_table():
    assert amnesic_table([("a", {"results": {}})]) == ""
    assert amnesic_rows({"amnesic": {"Tense": {"error": "x"}}}, None) == []
