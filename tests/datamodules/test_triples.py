"""NLI pairs regrouped into (premise, entailment, contradiction) triples for supervised SimCSE."""
from __future__ import annotations

import logging

import pytest

from sentence_lab.datamodules.pairs import PairsDataModule
from sentence_lab.datamodules.triples import group_triples
from sentence_lab.objectives.contract import TRIPLES
from tests.helpers.nli_files import write_nli_tsv

NLI_LABELS = ["entailment", "neutral", "contradiction"]


def test_each_premise_pairs_its_entailments_with_its_contradictions_in_file_order():
    rows = [("p one", "e1", "entailment"), ("p two", "e only", "entailment"), ("p one", "n1", "neutral"),
            ("p three", "c3", "contradiction"), ("p one", "c1", "contradiction"), ("p three", "e3a", "entailment"),
            ("p three", "e3b", "entailment"), ("p four", "c only", "contradiction"), ("p one", "e2", "entailment"),
            ("p one", "c2", "contradiction"), ("p three", "e3c", "entailment")]
    grouped = group_triples([p.split() for p, _, _ in rows], [[h] for _, h, _ in rows], [label for *_, label in rows])
    triples = [(" ".join(a), b[0], c[0]) for a, b, c in zip(grouped.anchors, grouped.positives, grouped.negatives)]
    assert triples == [("p one", "e1", "c1"), ("p one", "e2", "c2"), ("p three", "e3a", "c3")]
    assert grouped.premises_skipped == 2  # "p two" has no contradiction, "p four" no entailment
    assert grouped.hypotheses_unpaired == 2  # e3b and e3c: "p three" has one contradiction for three entailments


def nli_triples(tmp_path, labels=NLI_LABELS) -> PairsDataModule:
    write_nli_tsv(tmp_path / "train.tsv", 20)
    write_nli_tsv(tmp_path / "dev.tsv", 5)
    split = {"format": "tsv", "a": 0, "b": 1, "label": 2, "header": True}
    return PairsDataModule(train={**split, "path": str(tmp_path / "train.tsv")},
                           valid={**split, "path": str(tmp_path / "dev.tsv")}, labels=labels,
                           cache_dir=str(tmp_path / "cache"), batch_size=8,
                           tokenizer={"kind": "whitespace", "lowercase": True})


def test_labelled_nli_pairs_yield_batches_of_triples(tmp_path, caplog):
    dm = nli_triples(tmp_path)
    dm.yield_triples()
    assert dm.batch is TRIPLES
    with caplog.at_level(logging.INFO, logger="sentence_lab.datamodules.pairs"):
        dm.setup()
    assert len(dm.datasets["train"]) == 20 and len(dm.datasets["valid"]) == 5
    assert dm.triples_left_out == {"train": {"premises_skipped": 1, "hypotheses_unpaired": 0},
                                   "valid": {"premises_skipped": 1, "hypotheses_unpaired": 0}}
    assert "1 premises without both an entailment and a contradiction skipped" in caplog.text
    batches = list(dm.train_dataloader())
    assert [len(b["a_lengths"]) for b in batches] == [8, 8]  # full batches only: in-batch negatives
    vocab = dm.vocabs["source"]
    words = lambda ids, n: [vocab.itos[i] for i in ids[:n].tolist()]  # noqa: E731
    for b in batches:
        assert set(b) == set(TRIPLES.keys)
        for i in range(8):
            premise = words(b["a_tokens"][i], b["a_lengths"][i])
            number = premise[2]
            assert premise == ["premise", "number", number, "."]
            assert words(b["b_tokens"][i], b["b_lengths"][i]) == ["it", "holds", number, "."]
            assert words(b["c_tokens"][i], b["c_lengths"][i]) == ["never", number, "."]


def test_triples_are_refused_in_one_line_without_both_labels_or_after_setup(tmp_path):
    with pytest.raises(ValueError, match=r"triples need NLI pairs labelled entailment and contradiction.*"
                                         r"lacks \['contradiction'\]"):
        nli_triples(tmp_path, labels=["entailment", "neutral"]).yield_triples()
    dm = nli_triples(tmp_path)
    dm.setup()
    with pytest.raises(RuntimeError, match="before the data is read"):
        dm.yield_triples()
