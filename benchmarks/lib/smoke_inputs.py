"""The tiny inputs of the smoke runs and the tests, made here from a fixed seed: an ordered corpus, NLI pairs in
InferSent's format and a SentEval data tree, so that no smoke run needs ``SENTENCE_DATA`` or the network."""
from __future__ import annotations

import random
from pathlib import Path

from lib.made_up_tasks import (
    sick_rows,
    write_binary,
    write_mrpc,
    write_sick,
    write_sst,
    write_sts,
    write_stsb,
    write_trec,
)
from sentence_lab.tasks.sts import STS_DATASETS

WORDS = ("the cat dog man woman saw ran walked house tree river old young red blue quickly slowly and but with "
         "under over a an is was were sat stood").split()
POSITIVE, NEGATIVE = "good great fine nice happy".split(), "bad awful poor sad ugly".split()


def _sentence(rng: random.Random, extra: list[str] | None = None, lo: int = 3, hi: int = 9) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))] + ([rng.choice(extra)] if extra else [])
    rng.shuffle(words)
    return " ".join(words)


def _similar(rng: random.Random, sentence: str) -> str:
    """``sentence`` with one more word: close, but not the same (no tied cosines of 1)."""
    words = sentence.split()
    words.insert(rng.randint(0, len(words)), rng.choice(WORDS))
    return " ".join(words)


def tiny_nli(folder: Path, pairs: int, seed: int = 0) -> Path:
    """Made-up NLI pairs in InferSent's format (``s1``, ``s2``, ``labels`` . ``train``, ``dev``, ``test``): ``pairs``
    for training, a quarter of that for dev and for test; a hypothesis is its premise with a word more."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    labels = ("entailment", "neutral", "contradiction")
    for split, n in (("train", pairs), ("dev", max(pairs // 4, 8)), ("test", max(pairs // 4, 8))):
        premises = [_sentence(rng) for _ in range(n)]
        (folder / f"s1.{split}").write_text("\n".join(premises) + "\n")
        (folder / f"s2.{split}").write_text("\n".join(_similar(rng, p) for p in premises) + "\n")
        (folder / f"labels.{split}").write_text("\n".join(rng.choice(labels) for _ in range(n)) + "\n")
    return folder


def write_corpus(folder: Path, n_docs: int, sentences: int, seed: int) -> Path:
    """``n_docs`` documents of ``sentences`` random short sentences each (one paragraph per document)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        text = " ".join(_sentence(rng).capitalize() + "." for _ in range(sentences))
        (folder / f"doc{d:02d}.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def tiny_corpus(root: Path, sentences: int = 40) -> Path:
    """``root/train`` (3 documents) and ``root/valid`` (1), the layout ``data.train_dir`` / ``data.valid_dir`` read."""
    write_corpus(root / "train", 3, sentences, 0)
    write_corpus(root / "valid", 1, max(8, sentences // 2), 1)
    return root


def tiny_senteval(root: Path, n: int = 40, seed: int = 0) -> Path:
    """A data root in SentEval's layout (``root/senteval/<TASK>``) with a few dozen made-up examples of MR, TREC,
    SST2, MRPC, SICK, STSBenchmark and STS12-16: every regime once (nested CV, k-fold then test, train/dev/test,
    relatedness, cosine). Labels follow cue words, so the scores are above chance. Returns ``root``."""
    rng = random.Random(seed)
    se = root / "senteval"
    positive = [_sentence(rng, POSITIVE) for _ in range(n)]
    write_binary(se, "MR", positive, [_sentence(rng, NEGATIVE) for _ in range(n)])
    for split, size in (("train", n), ("dev", n // 2), ("test", n // 2)):
        write_sst(se, "binary", split, [(i % 2, _sentence(rng, POSITIVE if i % 2 else NEGATIVE)) for i in range(size)])
    coarse, cues = ["DESC", "HUM", "LOC"], [["why"], ["who"], ["where"]]
    for split, size in (("train", 2 * n), ("test", n // 2)):
        write_trec(se, split, [(coarse[i % 3], _sentence(rng, cues[i % 3])) for i in range(size)])
    for split, size in (("train", n), ("test", n // 2)):
        mrpc = []
        for i in range(size):
            a = _sentence(rng, POSITIVE)
            mrpc.append((i % 2, a, a if i % 2 else _sentence(rng, NEGATIVE)))
        write_mrpc(se, split, mrpc)
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        write_sick(se, split, sick_rows(rng, size, lambda: _sentence(rng, POSITIVE), lambda: _sentence(rng, NEGATIVE),
                                              lambda: _sentence(rng, None)))
    for split, size in (("train", n), ("dev", n // 2), ("test", n // 2)):
        stsb = []
        for i in range(size):
            a = _sentence(rng, POSITIVE)
            b = _similar(rng, a) if i % 2 else _sentence(rng, NEGATIVE)
            stsb.append(((4.5 if i % 2 else 1.0) + rng.random() * 0.5, a, b))
        write_stsb(se, split, stsb)
    for year, names in STS_DATASETS.items():
        for name in names:
            pairs = [(_sentence(rng, POSITIVE), i % 2) for i in range(8)]
            triples = [(a, _similar(rng, a) if same else _sentence(rng, NEGATIVE), same) for a, same in pairs]
            write_sts(se, year, name, [(a, b) for a, b, _ in triples],
                      [f"{(5.0 if same else 1.0) - rng.random():.2f}" for _, _, same in triples])
    return root
