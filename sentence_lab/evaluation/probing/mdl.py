"""Minimum description length probing, online code (Voita & Titov 2020, "Information-theoretic probing with
minimum description length", section 2.2).

The training examples, in a fixed random order, are cut at the fractions ``0.1%, 0.2%, 0.4%, 0.8%, 1.6%, 3.2%,
6.25%, 12.5%, 25%, 50%, 100%``. The first block is sent with the uniform code (``log2 K`` bits a label); each
later block with the code of a probe trained on every block before it (``-log2 p(y | x)`` bits a label). The sum
is the online codelength; the uniform codelength of all the labels is ``N log2 K``; their ratio is the
compression. Short codes mean the labels are easy to extract from the vectors, which accuracy alone does not say.

The probes of all blocks train together as groups of one stacked model (each group its prefix of the training
data, every L2 value, and the MLP grid when the protocol has one), each early-stopped on the task's dev split; a
block's probe is its group's best member on dev.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from sentence_lab.evaluation.classifier import Group, fit_members
from sentence_lab.evaluation.protocol import ProtocolParams

FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
ORDER_SEED = 1111


def block_ends(n: int, fractions: tuple[float, ...] = FRACTIONS) -> list[int]:
    """Where the blocks end (distinct, increasing, the last at ``n``); the first block holds at least one example."""
    ends = sorted({max(1, int(f * n)) for f in fractions} | {n})
    return [e for e in ends if e <= n]


def codelength(labels: np.ndarray, nclasses: int, ends: list[int], log_probs: list[np.ndarray]) -> dict:
    """The online code of ``labels`` (already in transmission order): the first block uniform, block ``i + 1``
    with ``log_probs[i]`` (natural-log probabilities of each of its true labels under the probe trained on blocks
    ``0..i``). Returns kbits and the pieces."""
    if len(log_probs) != len(ends) - 1:
        raise ValueError(f"{len(ends)} blocks need {len(ends) - 1} arrays of log-probabilities, got {len(log_probs)}")
    uniform_bits = len(labels) * math.log2(nclasses)
    first = ends[0] * math.log2(nclasses)
    blocks = [float(-np.sum(lp) / math.log(2)) for lp in log_probs]
    online = first + sum(blocks)
    return {"online_kbits": online / 1000, "uniform_kbits": uniform_bits / 1000,
            "compression": uniform_bits / online if online > 0 else float("inf"),
            "block_ends": list(ends), "block_kbits": [first / 1000, *[b / 1000 for b in blocks]]}


def online_codelength(Xtr: np.ndarray, ytr: np.ndarray, Xdev: np.ndarray, ydev: np.ndarray, params: ProtocolParams,
                      nclasses: int, fractions: tuple[float, ...] = FRACTIONS) -> dict:
    """The online codelength of a task's training labels given its vectors, every block's probe trained at once."""
    order = np.random.default_rng(ORDER_SEED).permutation(len(ytr))
    X, y = np.asarray(Xtr)[order], np.asarray(ytr).astype(np.int64)[order]
    ends = block_ends(len(y), fractions)
    members = params.probe_members(list(params.l2_grid))
    groups = [Group(np.arange(end), np.arange(len(ydev))) for end in ends[:-1]]
    fit = fit_members(X, y, groups, [reg for _, reg in members], params, nclasses, Xdev=Xdev, ydev=ydev,
                      hidden=params.member_shapes(members))
    best = fit.dev_accuracy().argmax(axis=1)  # per block: the first best member on dev
    log_probs = []
    for g, (start, stop) in enumerate(zip(ends, ends[1:])):
        logits = fit.logits(X[start:stop], g, int(best[g]))
        lp = torch.log_softmax(logits.double(), dim=-1).cpu().numpy()
        log_probs.append(lp[np.arange(stop - start), y[start:stop]])
    out = codelength(y, nclasses, ends, log_probs)
    out["fractions"] = list(fractions)
    return out
