"""The streaming preparation against a direct transcription of what it must produce: every document tokenised,
sentences under min_tokens dropped and the rest cut at max_tokens, words ranked by count then alphabetically from
id 1, validation words unseen in training at 0, documents numbered in file order (empty ones included)."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.text import Tokenizer
from sentence_lab.text.corpus_prep import (
    NOT_IN_TRAIN,
    NpyAppender,
    PreparedCorpusBroken,
    TokenRules,
    open_prepared,
    prepare_corpus,
)
from sentence_lab.text.documents import read_document, split_sentences
from tests.helpers import processes

TEXTS = {
    "train/a.txt": "The cat sat on the mat. It was happy!\n\nA dog barked at the cat, twice.",
    "train/b.txt": "",  # a document with no sentence still takes a document number
    "train/c/d.txt": "Dogs and cats don't agree. The end of a very long sentence that goes on and on and on.",
    "valid/v.txt": "The zebra sat. Cats agree.",
}


def write(root: Path) -> dict[str, list[Path]]:
    for name, text in TEXTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return {"train": sorted((root / "train").rglob("*.txt")), "valid": [root / "valid" / "v.txt"]}


def transcription(files: dict[str, list[Path]], rules: TokenRules) -> tuple[list[str], dict]:
    tokenizer = Tokenizer(rules.tokenizer, rules.lowercase)
    docs = {split: [[t[: rules.max_tokens] for t in map(tokenizer, split_sentences(read_document(p)))
                     if len(t) >= rules.min_tokens] for p in paths] for split, paths in files.items()}
    counts = Counter(t for doc in docs["train"] for s in doc for t in s)
    words = [NOT_IN_TRAIN] + sorted(counts, key=lambda w: (-counts[w], w))
    index = {w: i for i, w in enumerate(words) if i}
    out = {}
    for split, documents in docs.items():
        sentences = [(d, s) for d, doc in enumerate(documents) for s in doc]
        out[split] = {"ids": [index.get(t, 0) for _, s in sentences for t in s],
                      "offsets": list(np.cumsum([0] + [len(s) for _, s in sentences])),
                      "doc_ids": [d for d, _ in sentences], "counts": counts}
    return words, out


@pytest.mark.parametrize("workers", [0, 2])
def test_prepared_arrays_match_the_transcription(tmp_path, workers):
    files = write(tmp_path / "corpus")
    rules = TokenRules(min_tokens=3, max_tokens=8)
    manifest = prepare_corpus(files, rules, tmp_path / "prepared", workers=workers, show_progress=False)
    words, counts, splits = open_prepared(tmp_path / "prepared", ["train", "valid"])
    expected_words, expected = transcription(files, rules)
    assert words == expected_words
    assert counts.tolist() == [0] + [expected["train"]["counts"][w] for w in words[1:]]
    for split in ("train", "valid"):
        assert splits[split].ids.tolist() == expected[split]["ids"]
        assert splits[split].offsets.tolist() == expected[split]["offsets"]
        assert splits[split].doc_ids.tolist() == expected[split]["doc_ids"]
        assert isinstance(splits[split].ids, np.memmap)
    assert 0 in splits["valid"].ids.tolist()  # "zebra" is not a training word
    assert splits["train"].doc_ids.tolist()[-1] == 2  # the empty b.txt is document 1
    assert manifest["splits"]["train"]["tokens"] == len(expected["train"]["ids"])
    assert not [p for p in (tmp_path / "prepared").iterdir() if p.suffix in (".ids", ".lengths", ".docs")]


def test_prepared_corpus_holds_no_pickle(tmp_path):
    prepare_corpus(write(tmp_path / "corpus"), TokenRules(), tmp_path / "p", show_progress=False)
    assert json.loads((tmp_path / "p" / "words.json").read_text(encoding="utf-8"))[0] == NOT_IN_TRAIN
    np.save(tmp_path / "p" / "counts.npy", np.array([object()] * 3, dtype=object), allow_pickle=True)
    with pytest.raises(PreparedCorpusBroken, match="p: ValueError"):
        open_prepared(tmp_path / "p", ["train"])


@pytest.mark.parametrize("damage", ["truncate", "no_manifest", "old_format"])
def test_a_damaged_folder_is_refused_naming_it(tmp_path, damage):
    folder = tmp_path / "p"
    prepare_corpus(write(tmp_path / "corpus"), TokenRules(), folder, show_progress=False)
    ids = folder / "train.ids.npy"
    if damage == "truncate":
        ids.write_bytes(ids.read_bytes()[: ids.stat().st_size // 3])
    elif damage == "no_manifest":
        (folder / "manifest.json").unlink()
    else:
        manifest = json.loads((folder / "manifest.json").read_text())
        (folder / "manifest.json").write_text(json.dumps({**manifest, "format": 0}))
    with pytest.raises(PreparedCorpusBroken, match=str(folder)):
        open_prepared(folder, ["train", "valid"])


def test_an_array_written_a_chunk_at_a_time_loads_as_numpy_wrote_it(tmp_path):
    chunks = [np.arange(5), np.array([], dtype=np.int64), np.array([7, -3]), np.arange(1000, 1010)]
    writer = NpyAppender(tmp_path / "a.npy", np.int32, 17)
    for chunk in chunks:
        writer.append(chunk)
    writer.close()
    expected = np.concatenate(chunks).astype(np.int32)
    np.save(tmp_path / "b.npy", expected)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    loaded = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert loaded.dtype == np.int32 and np.array_equal(loaded, expected)
    short = NpyAppender(tmp_path / "c.npy", np.int64, 3)
    short.append(np.arange(2))
    with pytest.raises(ValueError, match="2 values written for a length of 3"):
        short.close()


def test_the_train_split_comes_first(tmp_path):
    files = write(tmp_path / "corpus")
    with pytest.raises(ValueError, match="'train' split first"):
        prepare_corpus({"valid": files["valid"], "train": files["train"]}, TokenRules(), tmp_path / "p")


@pytest.mark.slow
def test_the_preparation_workers_import_no_torch():
    code = "import sys, sentence_lab.text.corpus_prep; print('torch' in sys.modules, 'lightning' in sys.modules)"
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
