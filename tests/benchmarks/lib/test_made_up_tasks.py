"""Each made-up task file loads back, through its task's own loader, as the rows it was written from."""
from __future__ import annotations

from lib.made_up_tasks import write_binary, write_mrpc, write_sick, write_sts, write_trec
from sentence_lab.tasks.binary import load_subj
from sentence_lab.tasks.mrpc import load_mrpc
from sentence_lab.tasks.sick import load_sick_relatedness
from sentence_lab.tasks.sts import load_sts_year
from sentence_lab.tasks.trec import TREC_LABELS, load_trec


def test_binary_files_load_with_their_labels_subj_objective_as_positive(tmp_path):
    write_binary(tmp_path / "senteval", "SUBJ", ["an objective line", "caf\u00e9 facts"], ["i feel so"])
    split = load_subj(tmp_path).splits["all"]
    assert sorted(zip(split.a, split.y.tolist())) == [("an objective line", 1), ("caf\u00e9 facts", 1),
                                                       ("i feel so", 0)]


def test_trec_mrpc_sick_and_sts_round_trip(tmp_path):
    se = tmp_path / "senteval"
    write_trec(se, "train", [("HUM", "who is it"), ("LOC", "where is it")])
    write_trec(se, "test", [("NUM", "how many")])
    trec = load_trec(tmp_path)
    assert sorted(zip(trec.splits["train"].a, trec.splits["train"].y.tolist())) == [
        ("where is it ?", TREC_LABELS["LOC"]), ("who is it ?", TREC_LABELS["HUM"])]
    write_mrpc(se, "train", [(1, "a b", "a b c"), (0, "c d", "e f")])
    write_mrpc(se, "test", [(1, "g", "g h")])
    assert sorted(load_mrpc(tmp_path).splits["test"].y) == [1]
    rows = [("a man runs", "a man is running", 4.56, "ENTAILMENT"), ("x", "y", 1.0, "NEUTRAL")]
    for split in ("train", "dev", "test"):
        write_sick(se, split, rows)
    sick = load_sick_relatedness(tmp_path).splits["test"]
    assert sorted(sick.y) == [1.0, 4.6]  # one decimal, as SICK's files hold it
    write_sts(se, "STS12", "MSRpar", [("a", "b"), ("c", "d")], ["3.50", ""])
    for name in ("MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"):
        write_sts(se, "STS12", name, [("e", "f")], ["1.00"])
    msrpar = load_sts_year("STS12", tmp_path).splits["MSRpar"]
    assert list(msrpar.y) == [3.5] and len(msrpar) == 1  # the pair without a gold score is dropped
