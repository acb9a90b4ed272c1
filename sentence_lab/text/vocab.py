"""Vocabularies (index <-> word): the part of a model that travels inside its checkpoint."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


@dataclass
class Vocab:
    """Index <-> word, with ``<pad>=0 <unk>=1 <s>=2 </s>=3``."""

    itos: list[str]
    stoi: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if tuple(self.itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def build(cls, counts: Counter, max_size: int | None = None, min_count: int = 1) -> Vocab:
        """Most frequent words first, ties broken alphabetically so the result is deterministic."""
        words = [w for w, c in counts.items() if c >= min_count and w not in SPECIALS]
        words.sort(key=lambda w: (-counts[w], w))
        if max_size is not None:
            words = words[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + words)

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[str]], max_size: int | None = None,
                       min_count: int = 1) -> Vocab:
        counts: Counter = Counter()
        for tokens in sentences:
            counts.update(tokens)
        return cls.build(counts, max_size=max_size, min_count=min_count)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokens]
