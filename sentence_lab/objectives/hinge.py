"""What the hinge losses of Elgohary & Carpuat 2016 (section 2.2) share (``PairHinge``): aligned segments closer
than non-aligned ones by a margin. J_bi (``sentence_lab.objectives.jbi``): bilingual pairs, one encoder per language,
k random noise segments per side (their eq. 1, after Hermann & Blunsom 2014). J_pa (``sentence_lab.objectives.jpa``):
monolingual paraphrases, one encoder, MAX or MIX negatives (after Wieting et al. 2016)."""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, encode_together, layers_of
from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.objectives.contract import SentenceObjective

DISTANCES = ("euclidean", "cosine")
NEGATIVES = ("random", "max", "mix")
POOLS = ("opposite", "both")  # where negatives come from: the other side of the other pairs, or both sides
TEST_EMBEDDINGS = ("mean", "sum")  # an additive encoder's vector at test time: average (section 3.2) or sum


def distance(u: torch.Tensor, v: torch.Tensor, kind: str) -> torch.Tensor:
    """Row-wise distance of broadcastable ``[..., d]`` tensors: squared Euclidean (eq. 1) or 1 - cosine
    (the cosine similarity of Wieting et al., as a distance)."""
    if kind == "euclidean":
        return (u - v).pow(2).sum(-1)
    return 1.0 - F.cosine_similarity(u, v, dim=-1)


def hinge(margin: float, positive: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
    """``[margin + positive_i - negatives_ij]_+`` for ``positive [B]`` and ``negatives [B, k]``."""
    return (margin + positive.unsqueeze(1) - negatives).clamp(min=0.0)


def random_allowed(excluded: torch.Tensor, k: int, generator: torch.Generator | None) -> torch.Tensor:
    """``[n, k]``: for each row of ``excluded [n, m]``, ``k`` distinct columns that are not excluded, drawn
    uniformly."""
    n, m = excluded.shape
    allowed = m - int(excluded.sum(1).max()) if n else m
    if allowed < k:
        raise ValueError(f"a batch of {n} pairs cannot give {k} noise segments per pair: "
                         f"raise data.batch_size above {k} or lower objective.k")
    keys = torch.rand(n, m, generator=generator).to(excluded.device)
    keys.masked_fill_(excluded, 2.0)  # never chosen: the keys of the others are < 1
    return keys.topk(k, dim=1, largest=False).indices


def random_others(n: int, k: int, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """``[n, k]``: for each row, ``k`` distinct other rows drawn uniformly (never the row itself)."""
    return random_allowed(torch.eye(n, dtype=torch.bool, device=device), k, generator)


def closest_others(queries: torch.Tensor, pool: torch.Tensor, excluded: torch.Tensor, kind: str) -> torch.Tensor:
    """``[n]``: for each query, the row of ``pool`` at minimum distance among rows not ``excluded [n, m]``
    (MAX sampling: the hardest negative in the batch)."""
    with torch.no_grad():
        dist = distance(queries.unsqueeze(1), pool.unsqueeze(0), kind)
        return dist.masked_fill(excluded, float("inf")).argmin(1)


class PairHinge(SentenceObjective):
    """Encoders ``f`` (side a) and ``g`` (side b; ``f`` itself when ``shared_encoder``: one pass over both sides). For
    pair ``i`` with vectors ``x1 = f(a_i)``, ``x2 = g(b_i)`` and negatives ``n1_j`` (for ``x1``) and ``n2_j`` (for
    ``x2``)::

        sum_j [margin + dist(x1, x2) - dist(x1, n1_j)]_+ + [margin + dist(x1, x2) - dist(x2, n2_j)]_+

    averaged over the batch's pairs, plus ``l2 / 2 * ||W||^2`` over every word embedding table. Negatives come
    from the other pairs of the batch: from the opposite side (``pool="opposite"``: ``x1``'s from the side-b
    segments, J_bi's eq. 1) or from both sides (``pool="both"``: Wieting et al. 2016's MAX, which J_pa follows).
    Embedding: ``f(s)`` (the English side); with ``test_embedding="mean"`` an additive encoder's sum is divided
    by the sentence's length, the average of its word vectors (Elgohary & Carpuat 2016, section 3.2).

    Batch: ``PAIRS`` (``a_tokens``, ``a_lengths``, ``b_tokens``, ``b_lengths``: aligned segments, row ``i`` of
    each side a pair; see ``sentence_lab.objectives.contract``).
    """

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], shared_encoder: bool, negatives: str,
                 k: int, margin: float, distance: str, l2: float, seed: int = 1234, pool: str = "opposite",
                 test_embedding: str = "mean") -> None:
        super().__init__()
        if negatives not in NEGATIVES:
            raise ValueError(f"unknown objective.negatives {negatives!r}: use one of {NEGATIVES}")
        if distance not in DISTANCES:
            raise ValueError(f"unknown objective.distance {distance!r}: use one of {DISTANCES}")
        if pool not in POOLS:
            raise ValueError(f"unknown objective.pool {pool!r}: use one of {POOLS}")
        if test_embedding not in TEST_EMBEDDINGS:
            raise ValueError(f"unknown objective.test_embedding {test_embedding!r}: use one of {TEST_EMBEDDINGS}")
        if negatives != "random" and k != 1:
            raise ValueError(f"objective.negatives={negatives} takes one negative per side: set objective.k=1")
        self.f = encoder_factory("source")
        self.g = self.f if shared_encoder else encoder_factory("target")
        self.output_dim = self.f.output_dim
        self.negatives, self.k, self.margin, self.kind, self.l2 = negatives, k, margin, distance, l2
        self.pool, self.test_embedding = pool, test_embedding
        self.generator = torch.Generator().manual_seed(seed)

    def get_extra_state(self) -> dict:
        """The noise generator's state travels in the checkpoint (a resumed run draws the same noise)."""
        return {"generator": self.generator.get_state()}

    def set_extra_state(self, state: dict) -> None:
        if state and "generator" in state:
            self.generator.set_state(state["generator"])

    def _choose(self, queries: torch.Tensor, pool: torch.Tensor, excluded: torch.Tensor,
                gen: torch.Generator) -> torch.Tensor:
        """``[n, k]`` rows of ``pool`` for each query: random, MAX (the closest allowed) or MIX."""
        if self.negatives == "random":
            return random_allowed(excluded, self.k, gen)
        hardest = closest_others(queries, pool, excluded, self.kind)
        if self.negatives == "mix":  # MAX with probability 0.5, else a random allowed segment
            coin = torch.rand(queries.shape[0], generator=gen).to(queries.device) < 0.5
            hardest = torch.where(coin, hardest, random_allowed(excluded, 1, gen)[:, 0])
        return hardest.unsqueeze(1)

    def noise(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The negatives ``[B, k, d]`` of ``x1`` and of ``x2``: segments of the other pairs of the batch."""
        n = x1.shape[0]
        # Validation draws the same noise every time, so its hinge is comparable across validations.
        gen = self.generator if self.training else torch.Generator().manual_seed(0)
        own = torch.eye(n, dtype=torch.bool, device=x1.device)
        if self.pool == "both":  # any segment of another pair, either side: rows i and n + i are pair i's
            pool, excluded = torch.cat([x1, x2]), own.repeat(1, 2)
            return pool[self._choose(x1, pool, excluded, gen)], pool[self._choose(x2, pool, excluded, gen)]
        return x2[self._choose(x1, x2, own, gen)], x1[self._choose(x2, x1, own, gen)]

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        a, b = (batch["a_tokens"], batch["a_lengths"]), (batch["b_tokens"], batch["b_lengths"])
        x1, x2 = encode_together(self.f, a, b) if self.g is self.f else (self.f(*a), self.g(*b))
        negatives_1, negatives_2 = self.noise(x1, x2)
        positive = distance(x1, x2, self.kind)
        terms_1 = hinge(self.margin, positive, distance(x1.unsqueeze(1), negatives_1, self.kind))
        terms_2 = hinge(self.margin, positive, distance(x2.unsqueeze(1), negatives_2, self.kind))
        hinge_loss = (terms_1.sum(1) + terms_2.sum(1)).mean()
        tables = {id(m): m for enc in (self.f, self.g) for m in enc.modules() if isinstance(m, WordEmbedding)}
        penalty = sum((m.weight.pow(2).sum() for m in tables.values() if m.weight.requires_grad), x1.new_zeros(()))
        satisfied = torch.cat([terms_1, terms_2], 1).eq(0).float().mean()
        return {"loss": hinge_loss + self.l2 / 2 * penalty, "hinge": hinge_loss.detach(), "hinge_acc": satisfied}

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self._at_test(self.f(tokens, lengths), lengths)

    def embed_layers(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """``embed`` per layer of f, bottom first (a BoW has one)."""
        return [self._at_test(vectors, lengths) for vectors in layers_of(self.f, tokens, lengths)]

    def _at_test(self, vectors: torch.Tensor, lengths: torch.Tensor, encoder: nn.Module | None = None) -> torch.Tensor:
        """A summing BoW's vectors (``encoder``'s, ``f`` by default) as means when ``test_embedding=mean``; any other
        vectors as they are."""
        encoder = self.f if encoder is None else encoder
        if self.test_embedding == "mean" and isinstance(encoder, BagOfWordsEncoder) and encoder.pooling == "sum":
            return vectors / lengths.clamp(min=1).unsqueeze(-1).to(device=vectors.device, dtype=vectors.dtype)
        return vectors
