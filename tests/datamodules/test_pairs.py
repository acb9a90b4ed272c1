"""Pair readers and PairsDataModule on fixture files."""
from __future__ import annotations

import gzip

import pytest

from sentence_lab.datamodules.pair_readers import read_pairs
from sentence_lab.datamodules.pairs import PairsDataModule
from sentence_lab.objectives.contract import LABELLED_PAIRS, PAIRS


def test_readers_of_every_format(tmp_path, tiny_pairs):
    (tmp_path / "a.tsv").write_text("4.0\t[NP]\tthis video\tthe movie\t3,4\n1.0\t[NN]\teditor\thead\t1,1\n")
    assert read_pairs({"format": "tsv", "path": tmp_path / "a.tsv", "a": 2, "b": 3, "score": 0, "min_score": 3.0}) \
        == [("this video", "the movie", None)]
    (tmp_path / "x.tsv").write_text("id\tpremise\thypothesis\tlabel\n0\tA\tB\t2\n")
    assert read_pairs({"format": "tsv", "path": tmp_path / "x.tsv", "a": 1, "b": 2, "label": 3, "header": True,
                       "label_names": ["entailment", "neutral", "contradiction"]}) == [("A", "B", "contradiction")]
    (tmp_path / "m.csv").write_text('premise,hypothesis,label\n"One, two",Three,neutral\n')
    assert read_pairs({"format": "csv", "path": tmp_path / "m.csv"}) == [("One, two", "Three", "neutral")]
    (tmp_path / "s.jsonl").write_text('{"sentence1": "A", "sentence2": "B", "gold_label": "entailment"}\n')
    assert read_pairs({"format": "jsonl", "path": tmp_path / "s.jsonl"}) == [("A", "B", "entailment")]
    (tmp_path / "SICK.txt").write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
                                       "1\tA dog\tA cat\t3.2\tNEUTRAL\n")
    assert read_pairs({"format": "sick", "path": tmp_path / "SICK.txt"}) == [("A dog", "A cat", "neutral")]
    for side, text in (("en", "a cat\n\nthe dog\n"), ("fr", "un chat\nx\nle chien\n")):
        with gzip.open(tmp_path / f"t.{side}.gz", "wt") as f:
            f.write(text)
    assert read_pairs({"format": "aligned", "path": tmp_path / "t.en.gz", "target_path": tmp_path / "t.fr.gz"}) == [
        ("a cat", "un chat", None), ("the dog", "le chien", None)]  # the empty line's pair is dropped
    (tmp_path / "w.txt").write_text("big large\nodd\n")
    assert read_pairs({"format": "words", "path": tmp_path / "w.txt"}) == [("big", "large", None)]
    dev = read_pairs({"format": "infersent", "path": tiny_pairs["snli"], "split": "dev"})
    assert len(dev) == 20 and dev[0][2] == "entailment"


def test_unknown_format_and_missing_file_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="use one of"):
        read_pairs({"format": "xml", "path": "x"})
    with pytest.raises(FileNotFoundError, match="SENTENCE_DATA"):
        read_pairs({"format": "tsv", "path": tmp_path / "absent.tsv"})


def nli_module(tiny_pairs, tmp_path, **kwargs) -> PairsDataModule:
    snli = str(tiny_pairs["snli"])
    return PairsDataModule(
        train={"format": "tsv", "path": str(tiny_pairs["nli"]), "a": 0, "b": 1, "label": 2, "header": True},
        valid={"format": "infersent", "path": snli, "split": "dev"},
        test={"snli_test": {"format": "infersent", "path": snli, "split": "test"}},
        cache_dir=str(tmp_path / "cache"), tokenizer={"kind": "whitespace"}, batch_size=8,
        **({"labels": ["entailment", "neutral", "contradiction"]} | kwargs))


def test_labelled_pairs_share_one_vocabulary_and_drop_unlabelled(tiny_pairs, tmp_path):
    dm = nli_module(tiny_pairs, tmp_path)
    assert dm.batch is LABELLED_PAIRS and dm.test_names == ["snli_test"]
    dm.setup()
    assert dm.vocabs["source"] is dm.vocabs["target"]
    assert len(dm.datasets["train"]) == 60 and len(dm.datasets["valid"]) == 20  # the "-" pair is dropped
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) == set(LABELLED_PAIRS.keys) and batch["labels"].shape == (8,)
    assert [len(b["labels"]) for b in dm.test_dataloader()[0]] == [8, 8, 2]
    again = nli_module(tiny_pairs, tmp_path)
    again.setup()  # from the cache
    assert again.vocabs["source"].itos == dm.vocabs["source"].itos


def test_translation_pairs_get_a_vocabulary_per_side_and_a_held_out_validation(tiny_pairs, tmp_path):
    dm = PairsDataModule(train={"format": "tsv", "path": str(tiny_pairs["parallel"])}, valid=None, valid_size=10,
                         shared_vocab=False, cache_dir=str(tmp_path / "cache"), batch_size=8)
    assert dm.batch is PAIRS
    dm.setup()
    assert len(dm.datasets["train"]) == 70 and len(dm.datasets["valid"]) == 10
    source, target = dm.vocabs["source"], dm.vocabs["target"]
    assert "cat" in source.stoi and "cat" not in target.stoi and "taco" in target.stoi
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) == set(PAIRS.keys)
    assert sum(1 for _ in dm.val_dataloader()) == 1  # full batches only: in-batch negatives need them


def test_labels_that_match_nothing_name_the_setting(tiny_pairs, tmp_path):
    dm = nli_module(tiny_pairs, tmp_path, labels=["yes", "no"])
    with pytest.raises(ValueError, match="data.labels"):
        dm.setup()
