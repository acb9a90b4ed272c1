from pathlib import Path

import numpy as np
import pytest

from sentence_lab.datamodules import corpus
from sentence_lab.datamodules.contiguous import (
    ContiguousChunks,
    EpochShuffledGroups,
    EpochShuffledSampler,
    ScatteredRuns,
)
from sentence_lab.datamodules.corpus import CorpusSettings, TokenizedCorpus, load_corpus
from sentence_lab.datamodules.ordered_corpus import OrderedCorpusDataModule


def test_corpus_keeps_document_order_and_is_cached(tiny_corpus, tmp_path):
    settings = CorpusSettings(max_tokens=6)
    vocab, splits, hit = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", settings, tmp_path)
    assert not hit
    train = splits["train"]
    assert train.n_documents == 3 and np.all(np.diff(train.doc_ids) >= 0)
    assert max(len(train.sentence(i)) for i in range(len(train))) <= 6
    vocab2, splits2, hit2 = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", settings, tmp_path)
    assert hit2 and vocab2.itos == vocab.itos
    np.testing.assert_array_equal(splits2["train"].ids, train.ids)
    np.testing.assert_array_equal(splits2["valid"].offsets, splits["valid"].offsets)
    # Another setting is another cache entry.
    _, _, hit3 = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(max_tokens=7), tmp_path)
    assert not hit3 and len([p for p in tmp_path.glob("corpus-*") if p.is_dir()]) == 2


def test_missing_corpus_folder_names_the_setting(tmp_path):
    with pytest.raises(FileNotFoundError, match="SENTENCE_DATA"):
        load_corpus(tmp_path / "nope", tmp_path / "nope", CorpusSettings(), tmp_path)


def _corpus(n: int, docs: list[int]) -> TokenizedCorpus:
    return TokenizedCorpus(np.arange(4, 4 + n, dtype=np.int32), np.arange(n + 1, dtype=np.int64),
                           np.array(docs, dtype=np.int32))


def test_contiguous_chunks_are_consecutive_sentences():
    chunks = ContiguousChunks(_corpus(7, [0, 0, 0, 1, 1, 1, 1]), batch_size=3)
    assert len(chunks) == 2  # the last single sentence has no neighbour and is dropped
    second = chunks[1]
    assert second["tokens"][:, 0].tolist() == [7, 8, 9]
    assert second["doc_ids"].tolist() == [1, 1, 1]


def test_batch_order_is_shuffled_per_epoch_reproducibly():
    a, b = EpochShuffledSampler(50, seed=3), EpochShuffledSampler(50, seed=3)
    first = list(a)
    assert first == list(b) and sorted(first) == list(range(50)) and first != list(range(50))
    a.set_epoch(1)
    assert list(a) != first
    b.set_epoch(1)
    assert list(a) == list(b)
    assert list(EpochShuffledSampler(5, seed=3, shuffle=False)) == [0, 1, 2, 3, 4]


def test_scattered_runs_keep_each_run_consecutive_and_apart():
    # 11 sentences in two documents; runs of 3: [0-2] [3-5] [6-8] and [9, 10]; sentence i holds token 4 + i.
    runs = ScatteredRuns(_corpus(11, [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]), run_length=3)
    assert len(runs) == 4
    batch = runs[[2, 1, 3]]
    assert batch["tokens"][:, 0].tolist() == [10, 11, 12, 7, 8, 9, 13, 14]
    ids = batch["doc_ids"].tolist()
    # Rows share an id exactly when they are in one run and one document: run 1 crosses the documents' border.
    same = [[a == b for b in ids] for a in ids]
    groups = [{0, 1, 2}, {3}, {4, 5}, {6, 7}]
    assert same == [[any(i in g and j in g for g in groups) for j in range(8)] for i in range(8)]
    # A last run of a single sentence has no neighbour and is dropped.
    assert len(ScatteredRuns(_corpus(10, [0] * 10), run_length=3)) == 3
    with pytest.raises(ValueError, match="run_length"):
        ScatteredRuns(_corpus(10, [0] * 10), run_length=1)


def test_run_batches_cover_every_run_once_per_epoch_reproducibly():
    a, b = EpochShuffledGroups(10, group=4, seed=3), EpochShuffledGroups(10, group=4, seed=3)
    first = list(a)
    assert [len(g) for g in first] == [4, 4, 2] and len(a) == 3
    assert sorted(i for g in first for i in g) == list(range(10)) and first == list(b)
    assert [i for g in first for i in g] == list(EpochShuffledSampler(10, seed=3))
    a.set_epoch(1)
    assert list(a) != first
    assert list(EpochShuffledGroups(5, group=2, seed=3, shuffle=False)) == [[0, 1], [2, 3], [4]]


def test_run_length_must_fit_a_batch():
    with pytest.raises(ValueError, match="data.run_length=200"):
        OrderedCorpusDataModule("train", "valid", "cache", batch_size=128, run_length=200)


def test_sentence_length_limits_must_keep_sentences_non_empty():
    with pytest.raises(ValueError, match="min_tokens"):
        CorpusSettings(min_tokens=0)


def test_chunk_padding_keeps_every_token_in_order():
    corpus = TokenizedCorpus(np.arange(4, 10, dtype=np.int32), np.array([0, 3, 4, 6]), np.zeros(3, dtype=np.int32))
    batch = ContiguousChunks(corpus, batch_size=3)[0]
    assert batch["tokens"].tolist() == [[4, 5, 6], [7, 0, 0], [8, 9, 0]]
    assert batch["lengths"].tolist() == [3, 1, 2]


@pytest.mark.slow
def test_vocab_sources_remap_the_same_cached_tokens(tiny_corpus, tmp_path):
    from sentence_lab.text import UNK_ID
    from sentence_lab.text.glove import glove_words

    corpus_vocab, corpus_splits, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid",
                                                 CorpusSettings(vocab_size=10), tmp_path)
    glove_vocab, glove_splits, hit = load_corpus(tiny_corpus / "train", tiny_corpus / "valid",
                                                 CorpusSettings(vocab_source="glove"), tmp_path)
    assert hit  # the vocabulary is chosen after the cache: one tokenisation serves every source
    assert len(corpus_vocab) == 10 and len(glove_vocab) == 4 + len(glove_words())
    corpus_vocab_all, all_splits, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid",
                                                  CorpusSettings(vocab_size=None), tmp_path)
    words = lambda vocab, split: [vocab.itos[i] for i in split["train"].ids]  # noqa: E731
    glove_tokens, corpus_tokens = words(glove_vocab, glove_splits), words(corpus_vocab, corpus_splits)
    # Only words GloVe lacks (the fixture wraps lines inside words: "quickl" + "y") become <unk>.
    full = [corpus_vocab_all.itos[i] for i in all_splits["train"].ids]
    assert [t if t in glove_vocab.stoi else "<unk>" for t in full] == glove_tokens
    assert glove_tokens.count("<unk>") < len(glove_tokens) / 20
    assert {t for t in corpus_tokens if t != "<unk>"} <= set(corpus_vocab.itos)
    assert sum(t == "<unk>" for t in corpus_tokens) > 0
    assert ([a for a, b in zip(glove_tokens, corpus_tokens) if b != "<unk>"]
            == [b for b in corpus_tokens if b != "<unk>"])
    both, _, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid",
                             CorpusSettings(vocab_size=10, vocab_source="corpus+glove"), tmp_path)
    assert both.itos[:10] == corpus_vocab.itos and len(both) > len(corpus_vocab)
    assert (glove_splits["valid"].ids == UNK_ID).mean() < 0.05
    with pytest.raises(ValueError, match="vocab_source"):
        CorpusSettings(vocab_source="fasttext")


def test_xz_compressed_documents_read_like_plain_ones(tiny_corpus, tmp_path):
    import lzma
    import shutil

    for split in ("train", "valid"):
        (tmp_path / "xz" / split).mkdir(parents=True)
        for doc in (tiny_corpus / split).glob("*.txt"):
            (tmp_path / "xz" / split / (doc.name + ".xz")).write_bytes(lzma.compress(doc.read_bytes()))
        shutil.copytree(tiny_corpus / split, tmp_path / "plain" / split)
    plain = load_corpus(tmp_path / "plain" / "train", tmp_path / "plain" / "valid", CorpusSettings(), tmp_path / "c1")
    packed = load_corpus(tmp_path / "xz" / "train", tmp_path / "xz" / "valid", CorpusSettings(), tmp_path / "c2")
    assert plain[0].itos == packed[0].itos
    np.testing.assert_array_equal(plain[1]["train"].ids, packed[1]["train"].ids)


def test_case_sensitive_vocabulary_keeps_capitalised_words_apart(tiny_corpus, tmp_path):
    """Quick-Thoughts' case-sensitive vocabulary (Logeswaran & Lee 2018, section 4.2): data.lowercase=false."""
    cased, _, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(lowercase=False), tmp_path)
    lower, _, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(lowercase=True), tmp_path)
    capitalised = [w for w in cased.itos[4:] if w[0].isupper()]
    assert capitalised and "The" in cased.stoi and "the" in cased.stoi
    assert not any(w[0].isupper() for w in lower.itos[4:])


def _folders_with(tmp_path, tiny_corpus, name: str, content: bytes):
    train = tmp_path / "train"
    train.mkdir()
    for doc in (tiny_corpus / "train").iterdir():
        (train / doc.name).write_bytes(doc.read_bytes())
    (train / name).write_bytes(content)
    return train, tiny_corpus / "valid"


def test_a_corrupt_xz_document_is_named(tiny_corpus, tmp_path):
    train, valid = _folders_with(tmp_path, tiny_corpus, "broken.txt.xz", b"\xfd7zXZ\x00\x00 not really xz")
    with pytest.raises(ValueError, match=r"broken\.txt\.xz: not a readable \.xz file"):
        load_corpus(train, valid, CorpusSettings(), tmp_path / "cache")


def test_a_binary_document_is_refused_not_trained_on(tiny_corpus, tmp_path):
    garbage = np.random.default_rng(0).integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    train, valid = _folders_with(tmp_path, tiny_corpus, "garbage.txt", garbage)
    with pytest.raises(ValueError, match=r"garbage\.txt: not text \(\d+% of its characters"):
        load_corpus(train, valid, CorpusSettings(), tmp_path / "cache")


def test_real_text_with_a_few_odd_bytes_is_still_text(tiny_corpus, tmp_path):
    text = (tiny_corpus / "train" / "doc00.txt").read_bytes()
    train, valid = _folders_with(tmp_path, tiny_corpus, "latin1.txt", text + "Caf\xe9 na\xefve.\n".encode("latin-1"))
    vocab, splits, _ = load_corpus(train, valid, CorpusSettings(), tmp_path / "cache")
    assert splits["train"].n_documents == 4


def test_a_corpus_smaller_than_ten_batches_is_warned_about_with_the_numbers(tiny_corpus, tmp_path, caplog):
    from sentence_lab.datamodules.ordered_corpus import OrderedCorpusDataModule

    dm = OrderedCorpusDataModule(str(tiny_corpus / "train"), str(tiny_corpus / "valid"), str(tmp_path), batch_size=16,
                                 preprocess_workers=0)
    dm.setup("fit")
    n = len(dm.splits["train"])
    assert n < 160 and f"has {n} sentences, fewer than 10 batches of 16 (160)" in caplog.text


def test_a_broken_prepared_corpus_is_set_aside_and_prepared_again(tiny_corpus, tmp_path, caplog):
    settings = CorpusSettings(max_tokens=6)
    _, first, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", settings, tmp_path)
    expected = first["train"].ids.copy()
    del first
    folder = next(p for p in tmp_path.glob("corpus-*") if p.is_dir())
    ids = folder / "train.ids.npy"
    ids.write_bytes(ids.read_bytes()[: ids.stat().st_size // 3])
    with caplog.at_level("WARNING"):
        _, again, hit = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", settings, tmp_path)
    assert not hit and np.array_equal(again["train"].ids, expected)
    assert str(folder) in caplog.text and "set aside" in caplog.text
    assert len(list(tmp_path.glob(f"{folder.name}.broken-*"))) == 1


def test_an_interrupted_preparation_is_restarted_cleanly(tiny_corpus, tmp_path):
    from sentence_lab.datamodules.corpus import cache_key
    from sentence_lab.text.corpus_formats import list_corpus_files

    key = cache_key(list_corpus_files(tiny_corpus / "train"), list_corpus_files(tiny_corpus / "valid"),
                    CorpusSettings())
    stale = tmp_path / f"corpus-{key}.tmp-99999"  # a killed preparation's half-written folder: no manifest
    stale.mkdir()
    (stale / "train-0000000.ids").write_bytes(b"\0" * 64)
    _, splits, hit = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(), tmp_path)
    assert not hit and len(splits["train"]) > 0 and not stale.exists()
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [f"corpus-{key}"]


def test_a_full_disk_leaves_nothing_a_later_run_would_trust(tiny_corpus, tmp_path, monkeypatch):
    import errno

    from sentence_lab.datamodules import corpus as corpus_module
    from sentence_lab.text import corpus_prep

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(corpus_prep, "atomic_write_text", full)
    with pytest.raises(corpus_module.CorpusPreparationFailed, match=f"no space left on the disk of {tmp_path}"):
        load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(), tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_the_corpus_is_memory_mapped_and_remapped_per_span(tiny_corpus, tmp_path):
    vocab, splits, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(vocab_size=8), tmp_path)
    train = splits["train"]
    assert isinstance(train.word_ids, np.memmap) and train.vocab_map is not None
    assert train.ids.max() < len(vocab) and (train.ids == 1).any()  # words past the 8-word vocabulary are <unk>
    head = train.head(5)
    assert np.array_equal(head.ids, train.ids[: train.offsets[5]])
    assert np.array_equal(train.token_counts(len(vocab)), np.bincount(train.ids, minlength=len(vocab)))


def test_a_memory_mapped_corpus_pickles_as_its_location(tiny_corpus, tmp_path):
    import pickle

    _, splits, _ = load_corpus(tiny_corpus / "train", tiny_corpus / "valid", CorpusSettings(vocab_size=8), tmp_path)
    train = splits["train"]
    assert len(pickle.dumps(train)) < 1000 + train.vocab_map.nbytes < train.word_ids.nbytes + train.vocab_map.nbytes
    head = train.head(7)
    blob = pickle.dumps(head)
    back = pickle.loads(blob)
    assert isinstance(back.word_ids, np.memmap) and len(back) == 7
    assert np.array_equal(back.ids, head.ids) and np.array_equal(back.doc_ids, head.doc_ids)
    plain = TokenizedCorpus(np.arange(4, 10, dtype=np.int32), np.array([0, 3, 4, 6]), np.zeros(3, dtype=np.int32))
    assert np.array_equal(pickle.loads(pickle.dumps(plain)).ids, plain.ids)


def _load_in_process(args: tuple[str, str]) -> list[int]:
    root, cache = args
    _, splits, _ = load_corpus(Path(root) / "train", Path(root) / "valid", CorpusSettings(), cache)
    return splits["train"].ids[:50].tolist()


@pytest.mark.slow
def test_processes_starting_together_prepare_once(tiny_corpus, tmp_path):
    from sentence_lab.text.processes import ordered_map

    results = list(ordered_map(_load_in_process, [(str(tiny_corpus), str(tmp_path))] * 2, workers=2))
    assert results[0] == results[1]
    assert len([p for p in tmp_path.glob("corpus-*") if p.is_dir()]) == 1
    assert not list(tmp_path.glob("*.tmp-*"))


def test_unset_workers_follow_the_corpus_size(tmp_path, monkeypatch):
    """None asked for: a tokenising process per BYTES_PER_WORKER, at most one per core and per file; none below two."""
    monkeypatch.setattr(corpus, "default_workers", lambda: 3)

    def files(*megabytes: float) -> list[Path]:
        made = []
        for i, size in enumerate(megabytes):
            path = tmp_path / f"{len(list(tmp_path.iterdir()))}-{i}.txt"
            path.write_bytes(b"a" * int(size * corpus.BYTES_PER_WORKER))
            made.append(path)
        return made

    assert corpus.workers_for(files(0.01, 0.01)) == 0  # a few pages: this process
    assert corpus.workers_for(files(1.9)) == 0  # one file: one process at most, so this one
    assert corpus.workers_for(files(0.5, 0.5, 0.9)) == 0  # under two megabytes
    assert corpus.workers_for(files(1, 1)) == 2
    assert corpus.workers_for(files(1, 1, 1, 1, 1)) == 3  # no more than the cores


def test_a_data_module_asked_for_no_workers_counts_them_on_the_files(tiny_corpus, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(corpus, "workers_for", lambda files: asked.append(sorted(p.name for p in files)) or 0)
    module = OrderedCorpusDataModule(str(tiny_corpus / "train"), str(tiny_corpus / "valid"), str(tmp_path),
                                     batch_size=4, preprocess_workers=None)
    module.setup()
    expected = sorted(p.name for split in ("train", "valid") for p in (tiny_corpus / split).iterdir())
    assert asked == [expected] and len(module.splits["train"]) > 0
