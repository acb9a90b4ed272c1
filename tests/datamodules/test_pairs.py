"""Pair readers and PairsDataModule on fixture files."""
from __future__ import annotations

import gzip
import json
import logging
import os
import pickle
import types
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.datamodules import pairs as pairs_module
from sentence_lab.datamodules.pairs import PairsDataModule
from sentence_lab.datamodules.pairs_cache import read_pairs_cache, write_pairs_cache
from sentence_lab.objectives.contract import LABELLED_PAIRS, PAIRS
from sentence_lab.tasks.tatoeba import load_retrieval_pairs
from sentence_lab.text import files as files_module
from sentence_lab.text.held_out import RETRIEVAL_SEED, hold_out
from sentence_lab.text.pair_files import read_pairs


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


def test_pairs_held_out_for_retrieval_never_reach_training(tmp_path):
    """The held-out pairs never reach training (nor validation); a pair whose sentence recurs is never held out."""
    rows = [(f"the cat number {i} sleeps .", f"le chat numéro {i} dort .") for i in range(60)]
    rows += [("the cat number 3 sleeps .", "un autre chat dort ."), ("a dog barks .", "le chat numéro 5 dort .")]
    path = tmp_path / "en-fr.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    dm = PairsDataModule(train={"format": "tsv", "path": str(path)}, valid=None, valid_size=4, shared_vocab=False,
                         cache_dir=str(tmp_path / "cache"), batch_size=4, retrieval_held_out=20)
    dm.setup()
    held = hold_out(rows, 20, RETRIEVAL_SEED)
    assert held.candidates == 58  # pairs 3 and 5 have a side in two pairs
    itos = dm.vocabs["source"].itos
    seen = [" ".join(itos[i] for i in a) for a in dm.datasets["train"].a + dm.datasets["valid"].a]
    held_numbers = {a.split()[3] for a, _ in held.pairs}
    assert len(seen) == 62 - 20 and not any(s.split()[3] in held_numbers for s in seen if "number" in s)
    # the suite's translation retrieval reads the same file and draws the same pairs: the ones training never saw
    retrieval = load_retrieval_pairs(tmp_path, "fr", 20, path=path)
    assert list(zip(retrieval.first, retrieval.other)) == held.pairs
    plain = PairsDataModule(train={"format": "tsv", "path": str(path)}, valid=None, valid_size=4, shared_vocab=False,
                            cache_dir=str(tmp_path / "cache"), batch_size=4)
    plain.setup()  # another cache entry: the held-out setting is part of its key
    assert len(plain.datasets["train"]) + len(plain.datasets["valid"]) == 62


def test_labels_that_match_nothing_name_the_setting(tiny_pairs, tmp_path):
    dm = nli_module(tiny_pairs, tmp_path, labels=["yes", "no"])
    with pytest.raises(ValueError, match="data.labels"):
        dm.setup()


# ---- the tokenised-pairs cache: data, never code --------------------------------------------------------------
class Planted:
    """What a planted pickle holds: unpickling it creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def cache_file(tmp_path: Path) -> Path:
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].name.startswith("pairs-") and files[0].suffix == ".npz", files
    return files[0]


def datasets_of(dm: PairsDataModule) -> dict:
    return {name: (ds.a, ds.b, getattr(ds, "labels", None)) for name, ds in dm.datasets.items()}


def test_the_cache_round_trips_tokens_and_labels_exactly(tmp_path):
    splits = {"train": ([["naïve", "café", "日本語", "🙂"], [], [""], ["a", "", "b"], ["tab\there", "x\r"]],
                        [["x"], ["y", "z"], [], [""], ["back\\slash", "\u2028"]],
                        ["entailment", None, "neutral", None, "-"]),
              "test/snli_test": ([[]], [[""]], [None]),
              "valid": ([], [], [])}
    path = tmp_path / "cache" / "pairs-x.npz"
    write_pairs_cache(path, splits)
    assert read_pairs_cache(path) == splits
    with np.load(path, allow_pickle=False) as data:  # every array is plain data
        assert all(data[name].dtype != object for name in data.files)
    assert os.listdir(path.parent) == ["pairs-x.npz"]  # no temporary file left
    with pytest.raises(ValueError, match="newline"):
        write_pairs_cache(tmp_path / "cache" / "pairs-y.npz", {"train": ([["a\nb"]], [["c"]], [None])})
    assert os.listdir(path.parent) == ["pairs-x.npz"]


def test_a_second_setup_reads_the_cache_and_builds_the_same_datasets(tiny_pairs, tmp_path, monkeypatch):
    first = nli_module(tiny_pairs, tmp_path)
    first.setup()
    cache_file(tmp_path)

    def unread(cfg):
        raise AssertionError(f"{cfg} was read again")

    monkeypatch.setattr(pairs_module, "read_pairs", unread)
    again = nli_module(tiny_pairs, tmp_path)
    again.setup()
    assert datasets_of(again) == datasets_of(first)
    assert again.vocabs["source"].itos == first.vocabs["source"].itos


def test_a_planted_pickle_is_never_loaded(tiny_pairs, tmp_path, monkeypatch):
    payload = pickle.dumps(Planted(tmp_path / "control"))
    pickle.loads(payload)
    assert (tmp_path / "control").exists()  # the payload runs code when unpickled
    monkeypatch.setattr(pairs_module, "CACHE_VERSION", 1)  # the very key under which version 1 pickled its cache
    nli_module(tiny_pairs, tmp_path).setup()
    npz = cache_file(tmp_path)
    npz.unlink()
    marker = tmp_path / "marker"
    npz.with_suffix(".pkl").write_bytes(pickle.dumps(Planted(marker)))
    dm = nli_module(tiny_pairs, tmp_path)
    dm.setup()
    assert not marker.exists() and npz.exists() and len(dm.datasets["train"]) == 60


@pytest.mark.parametrize("kind", ["truncated", "not a zip", "a pickle", "an object array", "wrong arrays"])
def test_a_cache_file_that_cannot_be_read_is_logged_and_rebuilt(kind, tiny_pairs, tmp_path, caplog):
    first = nli_module(tiny_pairs, tmp_path)
    first.setup()
    npz = cache_file(tmp_path)
    marker = tmp_path / "marker"
    if kind == "truncated":
        npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    elif kind == "not a zip":
        npz.write_bytes(b"\0" * 100)
    elif kind == "a pickle":
        npz.write_bytes(pickle.dumps(Planted(marker)))
    elif kind == "an object array":
        np.savez(npz, manifest=np.array([Planted(marker)], dtype=object))
    else:
        manifest = {"version": pairs_module.CACHE_VERSION, "splits": ["train", "valid", "test/snli_test"]}
        np.savez(npz, manifest=np.array(json.dumps(manifest)), **{"0_a": np.zeros(3, np.int64)})
    dm = nli_module(tiny_pairs, tmp_path)
    with caplog.at_level(logging.WARNING, logger=pairs_module.__name__):
        dm.setup()
    assert "cannot be read" in caplog.text and str(npz) in caplog.text
    assert not marker.exists()
    assert datasets_of(dm) == datasets_of(first)
    assert set(read_pairs_cache(cache_file(tmp_path))) == {"train", "valid", "test/snli_test"}


def test_the_cache_is_never_written_through_a_link(tiny_pairs, tmp_path, monkeypatch):
    nli_module(tiny_pairs, tmp_path).setup()
    npz = cache_file(tmp_path)
    npz.unlink()
    outside, absent = tmp_path / "outside.txt", tmp_path / "absent.txt"
    outside.write_text("keep\n")
    names = iter(["0" * 16, "1" * 16, "2" * 16])
    monkeypatch.setattr(files_module, "secrets", types.SimpleNamespace(token_hex=lambda n: next(names)))
    links = [npz.with_suffix(f".tmp{os.getpid()}"),  # the name version 1 wrote to
             npz.with_name(f".{npz.name}.{'0' * 16}.npz"), npz.with_name(f".{npz.name}.{'1' * 16}.npz")]
    for link, target in zip(links, (outside, outside, absent)):
        link.symlink_to(target)
    nli_module(tiny_pairs, tmp_path).setup()
    assert outside.read_text() == "keep\n" and not absent.exists()
    assert all(link.is_symlink() for link in links)
    assert not npz.is_symlink() and set(read_pairs_cache(npz)) == {"train", "valid", "test/snli_test"}
    assert sorted(p.name for p in npz.parent.iterdir()) == sorted([npz.name, *(link.name for link in links)])
