"""Loaders: SentEval's files, counts, label maps, the (length, label) sort, and bad input."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.tasks import (
    TASKS,
    MalformedData,
    MissingTaskData,
    TaskDataError,
    UnknownTask,
    resolve_tasks,
)
from sentence_lab.tasks.base import ntokens
from sentence_lab.tasks.probing import XPROBE_SPLIT_NOTE

N = 40


def _is_sorted_single(split):
    keys = [(ntokens(s), y) for s, y in zip(split.a, split.y.tolist())]
    return keys == sorted(keys)


def _is_sorted_pairs(split):
    keys = [(ntokens(a), ntokens(b), y) for a, b, y in zip(split.a, split.b, split.y.tolist())]
    return keys == sorted(keys)


@pytest.mark.parametrize("task", ["MR", "CR", "SUBJ", "MPQA"])
def test_binary_tasks_one_split_sorted(senteval_root, task):
    data = TASKS[task].loader(senteval_root)
    split = data.splits["all"]
    assert len(split) == 2 * N and data.nclasses == 2
    assert sorted(np.bincount(split.y).tolist()) == [N, N]
    assert _is_sorted_single(split)


def test_subj_objective_is_label_one(senteval_root):
    first_objective = (senteval_root / "senteval/SUBJ/subj.objective").read_text("latin-1").splitlines()[0]
    split = TASKS["SUBJ"].loader(senteval_root).splits["all"]
    assert split.y[split.a.index(" ".join(first_objective.split()))] == 1


def test_split_tasks_sizes_and_labels(senteval_root):
    sst2, sst5 = TASKS["SST2"].loader(senteval_root), TASKS["SST5"].loader(senteval_root)
    assert {k: len(v) for k, v in sst2.splits.items()} == {"train": N, "dev": N // 2, "test": N // 2}
    assert sst5.nclasses == 5 and set(sst5.splits["train"].y.tolist()) == set(range(5))
    assert all(_is_sorted_single(s) for s in sst2.splits.values())
    trec = TASKS["TREC"].loader(senteval_root)
    assert trec.nclasses == 6 and len(trec.splits["train"]) == 2 * N
    assert not any(s.startswith("x ") for s in trec.splits["train"].a)  # the fine label is dropped


def test_pair_tasks(senteval_root):
    mrpc = TASKS["MRPC"].loader(senteval_root)
    assert len(mrpc.splits["train"]) == N  # header skipped
    assert _is_sorted_pairs(mrpc.splits["train"])
    sick_e = TASKS["SICKEntailment"].loader(senteval_root)
    sick_r = TASKS["SICKRelatedness"].loader(senteval_root)
    assert set(sick_e.splits["train"].y.tolist()) == {0, 1, 2}
    assert sick_r.splits["train"].y.dtype == np.float64
    assert set(sick_e.sentences()) == set(sick_r.sentences())  # shared: encoded once per run
    snli = TASKS["SNLI"].loader(senteval_root)
    keys = [(ntokens(b), ntokens(a)) for a, b in zip(snli.splits["dev"].a, snli.splits["dev"].b)]
    assert keys == sorted(keys)  # SentEval sorts SNLI by s2 first


def test_sts_drops_pairs_without_gold(senteval_root):
    sts15 = TASKS["STS15"].loader(senteval_root)
    assert all(len(s) == 7 for s in sts15.splits.values())
    assert sts15.info["pairs_without_gold_score_dropped"]["belief"] == 1
    sts13 = TASKS["STS13"].loader(senteval_root)
    assert list(sts13.splits) == ["FNWN", "headlines", "OnWN"]  # no SMT
    stsb = TASKS["STSBenchmark"].loader(senteval_root)
    assert len(stsb.splits["train"]) == N and stsb.splits["train"].y.max() <= 5


def test_xprobe_split_is_fixed_and_reported(senteval_root):
    a = TASKS["BigramShift"].loader(senteval_root)
    b = TASKS["BigramShift"].loader(senteval_root)
    assert len(a.splits["train"]) == 72 and len(a.splits["dev"]) == 8 and len(a.splits["test"]) == N
    assert a.splits["dev"].a == b.splits["dev"].a
    assert a.info["split"] == XPROBE_SPLIT_NOTE
    assert sorted(np.bincount(a.splits["dev"].y).tolist()) == [4, 4]  # stratified
    assert a.nclasses == 2


def test_senteval_probing_layout(tmp_path):
    lines = ["tr\tPRES\tshe walks", "tr\tPAST\the walked home", "va\tPAST\tit rained", "te\tPRES\twe go",
             "tr\tPRES\tthey run fast today"]
    (tmp_path / "probing").mkdir()
    (tmp_path / "probing" / "past_present.txt").write_text("\n".join(lines) + "\n")
    data = TASKS["Tense"].loader(tmp_path)
    assert data.info["layout"] == "senteval" and data.nclasses == 2
    assert data.splits["train"].y.tolist() == [1, 0, 1]  # PAST=0, PRES=1 (sorted labels); sorted by length
    assert data.splits["train"].a[0] == "she walks"


def test_word_content_forces_logistic_regression():
    assert TASKS["WordContent"].params_override["nhid"] == 0


def test_missing_data_names_path(senteval_root):
    with pytest.raises(MissingTaskData) as err:
        TASKS["TopConstituents"].loader(senteval_root)
    msg = str(err.value)
    assert "top_constituents" in msg and "get_senteval_data.sh" in msg and "\n" not in msg
    (senteval_root / "senteval/SNLI/s1.train").unlink()
    with pytest.raises(MissingTaskData, match="s1.train"):
        TASKS["SNLI"].loader(senteval_root)


@pytest.mark.parametrize("task,relpath,bad_line", [
    ("SST2", "senteval/SST/binary/sentiment-train", "no label here"),
    ("TREC", "senteval/TREC/TREC_10.label", "WHAT:x who is it"),
    ("SICKEntailment", "senteval/SICK/SICK_trial.txt", "9\ta b\tc d\t3.0\tMAYBE"),
    ("STS14", "senteval/STS/STS14-en-test/STS.input.images.txt", "only one sentence"),
    ("BigramShift", "probing/xprobe-en/bigram_shift/te.txt", "a sentence without label"),
])
def test_malformed_line_names_file_and_line(senteval_root, task, relpath, bad_line):
    path = senteval_root / relpath
    lines = path.read_text(encoding="latin-1").splitlines()
    lines[2] = bad_line
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    with pytest.raises(MalformedData) as err:
        TASKS[task].loader(senteval_root)
    assert str(path) in str(err.value) and "line 3" in str(err.value)


def test_resolve_tasks_groups_and_unknown():
    # "all" is SentEval's suite; the cosine-protocol variants are asked for by name or with sts_cosine
    assert resolve_tasks("all") == [t for t in TASKS if not t.endswith("Cosine")]
    assert resolve_tasks("sts_cosine")[-2:] == ["STSBenchmarkCosine", "SICKRelatednessCosine"]
    assert resolve_tasks(["mr", "STS14", "MR"]) == ["MR", "STS14"]
    assert len(resolve_tasks(["probing"])) == 10
    assert "STS12" in resolve_tasks("sts") and "SICKRelatedness" in resolve_tasks("transfer")
    with pytest.raises(UnknownTask) as err:
        resolve_tasks(["MR", "Nope"])
    assert "'Nope'" in str(err.value) and "CoordinationInversion" in str(err.value) and "probing" in str(err.value)


def test_another_languages_probing_tasks_come_from_its_own_folders(tmp_path):
    """French: X-Probe's probing/xprobe-fr first, else probing/generated-fr; never SentEval's English files; a
    generated set of another language refused in one line."""
    probing = tmp_path / "probing"
    (probing / "generated-fr").mkdir(parents=True)
    lines = ["tr\tPRES\telle marche", "tr\tPAST\til a marché", "va\tPAST\til pleuvait", "te\tPRES\tnous allons"]
    for folder in (probing, probing / "generated-fr"):  # English (SentEval's layout) and French, side by side
        (folder / "past_present.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (probing / "generated-fr" / "meta.json").write_text('{"language": "fr"}', encoding="utf-8")
    french = TASKS["Tense"].loader(tmp_path, language="fr")
    assert french.info["layout"] == "generated" and french.info["probing_set"] == str(probing / "generated-fr")
    for split in ("va", "te"):
        xprobe = probing / "xprobe-fr" / "past_present"
        xprobe.mkdir(parents=True, exist_ok=True)
        (xprobe / f"{split}.txt").write_text("".join(f"phrase numéro {i} .\t{'PAST' if i % 2 else 'PRES'}\n"
                                                     for i in range(20)), encoding="utf-8")
    assert TASKS["Tense"].loader(tmp_path, language="fr").info["layout"] == "xprobe"
    assert TASKS["Tense"].loader(tmp_path, source="generated", language="fr").info["layout"] == "generated"
    with pytest.raises(MissingTaskData, match="SentEval's probing data is English only"):
        TASKS["Tense"].loader(tmp_path, source="senteval", language="fr")
    with pytest.raises(TaskDataError, match="holds 'fr' probing tasks, not 'de'"):
        TASKS["Tense"].loader(tmp_path, source=f"generated:{probing / 'generated-fr'}", language="de")
    with pytest.raises(MissingTaskData, match="probing_gen language=de"):
        TASKS["Tense"].loader(tmp_path, language="de")
