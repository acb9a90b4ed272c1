"""A made-up data root in SentEval's layout (every task family, a few dozen examples each): the fixture of the
evaluation, training-callback and SentEval-API tests (the toy encoder they score: ``tests/helpers/hash_encoder.py``)."""
from __future__ import annotations

import random
from pathlib import Path

from lib.made_up_tasks import (
    BINARY_FILES,
    sick_rows,
    write_binary,
    write_mrpc,
    write_sick,
    write_snli,
    write_sst,
    write_sts,
    write_stsb,
    write_trec,
    write_xprobe,
)
from sentence_lab.tasks.probing import PROBING_FILES
from sentence_lab.tasks.sts import STS_DATASETS

FILLER = "the a movie film story plot actor scene music time people day way man world life work".split()
POS, NEG = "good great fine nice happy".split(), "bad awful poor sad ugly".split()


def _sentence(rng: random.Random, cue: list[str], n: int | None = None) -> str:
    words = rng.sample(FILLER, n or rng.randint(2, 7)) + [rng.choice(cue)]
    rng.shuffle(words)
    return " ".join(words)


def make_senteval_tree(root: Path, n: int = 40, seed: int = 0, xprobe: bool = True) -> Path:
    """Every task in SentEval's layout (probing in X-Probe's, TopConstituents left out). Returns root."""
    rng = random.Random(seed)
    se = root / "senteval"
    for task in BINARY_FILES:
        positive = [_sentence(rng, POS) for _ in range(n)]
        write_binary(se, task, positive, [_sentence(rng, NEG) for _ in range(n)])
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        binary, fine = [], []
        for i in range(size):
            y = i % 2
            binary.append((y, _sentence(rng, POS if y else NEG)))
            y5 = i % 5
            fine.append((y5, _sentence(rng, [POS, NEG, FILLER, POS[:2], NEG[:2]][y5])))
        write_sst(se, "binary", split, binary)
        write_sst(se, "fine", split, fine)
    coarse = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    cues = [["abbreviation"], ["why"], ["what"], ["who"], ["where"], ["many"]]
    for split, size in [("train", 2 * n), ("test", n // 2)]:
        write_trec(se, split, [(coarse[i % 6], _sentence(rng, cues[i % 6])) for i in range(size)])
    for split, size in [("train", n), ("test", n // 2)]:
        rows = []
        for i in range(size):
            a = _sentence(rng, POS)
            rows.append((i % 2, a, a if i % 2 else _sentence(rng, NEG)))
        write_mrpc(se, split, rows)
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        write_sick(se, split, sick_rows(rng, size, lambda: _sentence(rng, POS), lambda: _sentence(rng, NEG),
                                              lambda: _sentence(rng, FILLER)))
    snli_labels = ["entailment", "neutral", "contradiction"]
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        s1 = [_sentence(rng, POS) for _ in range(size)]
        s2 = [s1[i] if i % 3 == 0 else _sentence(rng, FILLER if i % 3 == 1 else NEG) for i in range(size)]
        write_snli(se, split, s1, s2, [snli_labels[i % 3] for i in range(size)])
    for year, names in STS_DATASETS.items():
        for name in names:
            pairs, gold = [], []
            for i in range(8):
                a = _sentence(rng, POS)
                pairs.append((a, a if i % 2 else _sentence(rng, NEG)))
                gold.append("" if i == 7 and year == "STS15" else f"{(5.0 if i % 2 else 1.0) - rng.random():.2f}")
            write_sts(se, year, name, pairs, gold)
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        stsb = []
        for i in range(size):
            a = _sentence(rng, POS)
            b = a if i % 2 else _sentence(rng, NEG)
            stsb.append(((4.5 if i % 2 else 1.0) + rng.random() * 0.5, a, b))
        write_stsb(se, split, stsb)
    if xprobe:
        for task, folder in PROBING_FILES.items():
            if task == "TopConstituents":
                continue
            for split, size in [("va", 2 * n), ("te", n)]:
                write_xprobe(root / "probing" / "xprobe-en" / folder, split,
                             [(_sentence(rng, [POS, NEG][i % 2]), ["O", "I"][i % 2]) for i in range(size)])
    return root


