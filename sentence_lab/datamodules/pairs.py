"""LightningDataModule over sentence pairs: NLI, translations, paraphrases (``PAIRS`` or ``LABELLED_PAIRS``)."""
from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from sentence_lab.datamodules.contiguous import EpochShuffledSampler
from sentence_lab.datamodules.corpus import file_fingerprint
from sentence_lab.datamodules.pairs_cache import (
    CACHE_READ_ERRORS,
    CACHE_VERSION,
    Split,
    read_pairs_cache,
    write_pairs_cache,
)
from sentence_lab.datamodules.resumable import ResumableBatches, SkippingDataLoader
from sentence_lab.datamodules.triples import TokenizedTriples, collate_triples, group_triples
from sentence_lab.objectives.contract import LABELLED_PAIRS, PAIRS, TRIPLES
from sentence_lab.text import EOS_ID, Tokenizer, Vocab
from sentence_lab.text.config_values import plain
from sentence_lab.text.held_out import RETRIEVAL_SEED, hold_out
from sentence_lab.text.padding import pad_batch
from sentence_lab.text.pair_files import read_pairs
from sentence_lab.text.subword import tokenizer_vocab

log = logging.getLogger(__name__)

class TokenizedPairs(Dataset):
    """Pairs as id lists; item ``i`` is ``(a_ids, b_ids, label_index or -1)``."""

    def __init__(self, a: list[list[int]], b: list[list[int]], labels: list[int]) -> None:
        self.a, self.b, self.labels = a, b, labels

    def __len__(self) -> int:
        return len(self.a)

    def __getitem__(self, i: int) -> tuple[list[int], list[int], int]:
        return self.a[i], self.b[i], self.labels[i]


def collate_pairs(items: Sequence[tuple[list[int], list[int], int]]) -> dict[str, torch.Tensor]:
    a_tokens, a_lengths = pad_batch([a for a, _, _ in items])
    b_tokens, b_lengths = pad_batch([b for _, b, _ in items])
    batch = {"a_tokens": a_tokens, "a_lengths": a_lengths, "b_tokens": b_tokens, "b_lengths": b_lengths}
    if items and items[0][2] >= 0:
        batch["labels"] = torch.tensor([label for _, _, label in items], dtype=torch.long)
    return batch


def _split_files(split: Mapping[str, Any]) -> list[Path]:
    """The files a split description reads (a folder, as InferSent's layout, gives its files)."""
    files = []
    for f in (Path(v) for k, v in split.items() if k in ("path", "target_path")):
        files += [p for p in (sorted(f.iterdir()) if f.is_dir() else [f]) if p.exists()]
    return files


class PairsDataModule(ResumableBatches):
    """``train`` / ``valid`` / ``test`` split descriptions (``sentence_lab.text.pair_files``); ``valid: null``
    holds out ``valid_size`` random training pairs (seeded) instead. ``labels``: the class names in
    index order (NLI), or null for unlabelled pairs (translations, paraphrases); pairs whose label is not
    listed are dropped (SNLI's ``-``). Side a is tokenised by ``tokenizer``, side b by ``target_tokenizer``
    (default: the same). ``shared_vocab``: one vocabulary over both sides (NLI, paraphrases), else one per
    side (``source``, ``target``), each of the ``vocab_size`` most frequent training words.
    Tokenised splits are cached in ``cache_dir``. ``retrieval_held_out``: that many translation pairs are held out
    for the suite's translation retrieval (``sentence_lab.text.held_out``, seed ``RETRIEVAL_SEED``, the suite's), and
    every training pair sharing a sentence with them, on either side, is dropped. ``yield_triples()`` (before
    ``setup``) turns labelled NLI pairs into (premise, entailment, contradiction) triples (``TRIPLES``,
    ``sentence_lab.datamodules.triples``), every split; what could not be grouped is counted in ``triples_left_out``.
    """

    def __init__(self, train: Mapping, cache_dir: str, valid: Mapping | None = None,
                 test: Mapping[str, Mapping] | None = None, labels: Sequence[str] | None = None,
                 shared_vocab: bool = True, tokenizer: Mapping | None = None, target_tokenizer: Mapping | None = None,
                 vocab_size: int = 20000, target_vocab_size: int | None = None, min_count: int = 1,
                 max_tokens: int = 50, max_train_pairs: int | None = None, valid_size: int = 2000,
                 batch_size: int = 64, seed: int = 1234, num_workers: int = 0,
                 retrieval_held_out: int | None = None) -> None:
        super().__init__()
        self.retrieval_held_out = retrieval_held_out
        self.splits_cfg = {"train": plain(train), "valid": plain(valid)}
        self.test_cfg: dict[str, dict] = plain(test) or {}
        self.labels = list(labels) if labels else None
        self.batch = LABELLED_PAIRS if self.labels else PAIRS
        self.shared_vocab = shared_vocab
        source_tok = plain(tokenizer) or {}
        self.tokenizers = {"source": Tokenizer(**source_tok),
                           "target": Tokenizer(**(plain(target_tokenizer) or source_tok))}
        self.vocab_size, self.target_vocab_size, self.min_count = vocab_size, target_vocab_size or vocab_size, min_count
        self.max_tokens, self.max_train_pairs, self.valid_size = max_tokens, max_train_pairs, valid_size
        self.batch_size, self.seed, self.num_workers, self.cache_dir = batch_size, seed, num_workers, cache_dir
        self.vocabs: dict[str, Vocab] = {}
        self.datasets: dict[str, TokenizedPairs | TokenizedTriples] = {}
        self.triples_left_out: dict[str, dict[str, int]] = {}

    def yield_triples(self) -> None:
        """Batches of (premise, entailment, contradiction) from here on (supervised SimCSE asks for them); refused in
        one line when the pairs are not labelled with both classes, or after ``setup``."""
        if self.vocabs:
            raise RuntimeError("yield_triples() after setup(): ask for triples before the data is read")
        missing = [name for name in ("entailment", "contradiction") if name not in (self.labels or [])]
        if missing:
            raise ValueError(f"triples need NLI pairs labelled entailment and contradiction, but data.labels="
                             f"{self.labels} lacks {missing}: use data=nli (or a data config with those labels)")
        if not self.shared_vocab:
            raise ValueError("triples are read by one encoder: set data.shared_vocab=true")
        self.batch = TRIPLES

    @property
    def test_names(self) -> list[str]:
        return list(self.test_cfg)

    # ---- reading and tokenising -------------------------------------------------------------
    def _tokenized(self) -> dict[str, Split]:
        """Every split as token lists, from the cache when the files and settings are unchanged (a cache file that
        cannot be read is logged and written again)."""
        wanted = {name: cfg for name, cfg in self.splits_cfg.items() if cfg} | {
            f"test/{name}": cfg for name, cfg in self.test_cfg.items()}
        settings = {"v": CACHE_VERSION, "tok": {k: t.identity() for k, t in self.tokenizers.items()},
                    "max_tokens": self.max_tokens, "splits": wanted,
                    **({"retrieval_held_out": [self.retrieval_held_out, RETRIEVAL_SEED]} if self.retrieval_held_out
                       else {}),
                    "files": {name: file_fingerprint(_split_files(cfg)) for name, cfg in wanted.items()}}
        key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
        path = Path(self.cache_dir) / f"pairs-{key}.npz"
        if path.exists():
            try:
                cached = read_pairs_cache(path)
                if set(cached) != set(wanted):
                    raise ValueError(f"it holds the splits {sorted(cached)}, not {sorted(wanted)}")
            except CACHE_READ_ERRORS as err:
                log.warning("Tokenised pairs in %s cannot be read (%s): tokenising them again", path, err)
            else:
                log.info("Loaded tokenised pairs from %s", path)
                return cached
        out = {}
        for name, cfg in wanted.items():
            pairs = read_pairs(cfg)
            if not pairs:
                raise ValueError(f"the {name} split {cfg} holds no pairs: check its path and format")
            if name == "train" and self.retrieval_held_out:
                held = hold_out([(a, b) for a, b, _ in pairs], self.retrieval_held_out, RETRIEVAL_SEED)
                kept = [pair for pair in pairs if not held.excludes((pair[0], pair[1]))]
                log.info("Held out %d pairs for translation retrieval: %d training pairs of %d share a sentence with "
                         "them and are dropped", len(held.pairs), len(pairs) - len(kept), len(pairs))
                pairs = kept
            src, tgt = self.tokenizers["source"], self.tokenizers["target"]
            log.info("Tokenising %d %s pairs", len(pairs), name)
            out[name] = ([src(a)[: self.max_tokens] for a, _, _ in pairs],
                         [tgt(b)[: self.max_tokens] for _, b, _ in pairs], [label for _, _, label in pairs])
        try:
            write_pairs_cache(path, out)
        except (OSError, ValueError) as err:
            log.warning("Tokenised pairs not cached in %s (%s): they are tokenised again next time", path, err)
        return out

    def _hold_out(self, train: tuple) -> tuple[tuple, tuple]:
        n = len(train[0])
        if n <= self.valid_size:
            raise ValueError(f"{n} training pairs cannot spare data.valid_size={self.valid_size} for validation: "
                             "give a valid split or lower data.valid_size")
        order = np.random.default_rng(self.seed).permutation(n)
        held, kept = sorted(order[: self.valid_size]), sorted(order[self.valid_size :])
        pick = lambda idx: tuple([column[i] for i in idx] for column in train)  # noqa: E731
        return pick(kept), pick(held)

    def _build_vocabs(self, train: tuple) -> None:
        counts_a: Counter[str] = Counter()
        counts_b: Counter[str] = Counter()
        for tokens in train[0]:
            counts_a.update(tokens)
        for tokens in train[1]:
            counts_b.update(tokens)
        models = {side: t for side, t in self.tokenizers.items() if t.kind == "huggingface"}
        if models and self.shared_vocab and len(models) != len(self.tokenizers):
            raise ValueError("data.shared_vocab=true with a pre-trained model's tokenizer on one side and a word "
                             "tokenizer on the other: the two sides cannot share one vocabulary; drop "
                             "data.target_tokenizer or set data.shared_vocab=false")
        if models:  # a pre-trained model's side reads its own vocabulary, the other side its training words
            target = (tokenizer_vocab(models["target"].model) if "target" in models else
                      Vocab.build(counts_b, max_size=self.target_vocab_size, min_count=self.min_count))
            source = tokenizer_vocab(models["source"].model) if "source" in models else Vocab.build(
                counts_a, max_size=self.vocab_size, min_count=self.min_count)
            self.vocabs = {"source": source, "target": target}
        elif self.shared_vocab:
            shared = Vocab.build(counts_a + counts_b, max_size=self.vocab_size, min_count=self.min_count)
            self.vocabs = {"source": shared, "target": shared}
        else:
            self.vocabs = {"source": Vocab.build(counts_a, max_size=self.vocab_size, min_count=self.min_count),
                           "target": Vocab.build(counts_b, max_size=self.target_vocab_size, min_count=self.min_count)}

    def _triple_ids(self, split: tuple, name: str) -> TokenizedTriples:
        grouped = group_triples(*split)
        if not grouped.anchors:
            raise ValueError(f"no premise of the {name} split has both an entailment and a contradiction "
                             "hypothesis: it cannot give triples")
        self.triples_left_out[name] = {"premises_skipped": grouped.premises_skipped,
                                       "hypotheses_unpaired": grouped.hypotheses_unpaired}
        log.info("Triples of %s: %d; %d premises without both an entailment and a contradiction skipped, %d "
                 "hypotheses left without a partner", name, len(grouped.anchors), grouped.premises_skipped,
                 grouped.hypotheses_unpaired)
        vocab = self.vocabs["source"]
        return TokenizedTriples(*([vocab.encode(tokens) for tokens in side]
                                  for side in (grouped.anchors, grouped.positives, grouped.negatives)))

    def _ids(self, split: tuple, name: str) -> TokenizedPairs | TokenizedTriples:
        if self.batch is TRIPLES:
            return self._triple_ids(split, name)
        a_tokens, b_tokens, labels = split
        if self.labels:
            index = {label: i for i, label in enumerate(self.labels)}
            keep = [i for i, label in enumerate(labels) if label in index]
            if not keep:
                raise ValueError(f"no pair of the {name} split has a label in data.labels={self.labels}: "
                                 f"its labels look like {sorted(set(map(str, labels)))[:5]}")
            label_ids = [index[labels[i]] for i in keep]
        else:
            keep, label_ids = list(range(len(a_tokens))), [-1] * len(a_tokens)
        src, tgt = self.vocabs["source"], self.vocabs["target"]
        return TokenizedPairs([src.encode(a_tokens[i]) for i in keep], [tgt.encode(b_tokens[i]) for i in keep],
                              label_ids)

    def setup(self, stage: str | None = None) -> None:
        if self.vocabs:
            return
        splits = self._tokenized()
        train = splits["train"]
        if self.max_train_pairs:
            n = self.max_train_pairs
            train = (train[0][:n], train[1][:n], train[2][:n])
        valid = splits.get("valid")
        if valid is None:
            train, valid = self._hold_out(train)
        self._build_vocabs(train)
        self.datasets = {"train": self._ids(train, "train"), "valid": self._ids(valid, "valid")}
        for name in self.test_cfg:
            self.datasets[f"test/{name}"] = self._ids(splits[f"test/{name}"], name)
        sizes = ", ".join(f"{name} {len(ds)}" for name, ds in self.datasets.items())
        vocab_sizes = " / ".join(f"{side} {len(v)}" for side, v in self.vocabs.items())
        log.info("Pairs: %s; vocabulary %s%s", sizes, vocab_sizes, " (shared)" if self.shared_vocab else "")
        self.warn_if_small(len(self.datasets["train"]), self.batch_size, "pairs",
                           str(self.splits_cfg["train"].get("path", "data.train.path")))

    # ---- loaders ----------------------------------------------------------------------------
    def token_counts(self) -> dict[str, np.ndarray]:
        """How often each id of each side's vocabulary occurs in the training pairs, ``</s>`` once per sentence
        (what a decoder's ``output_bias: log_unigram`` starts from)."""
        train = self.datasets["train"]
        out = {}
        for side, sentences in (("source", train.a), ("target", train.b)):
            ids = np.fromiter((i for s in sentences for i in s), dtype=np.int64)
            counts = np.bincount(ids, minlength=len(self.vocabs[side])).astype(np.int64)
            counts[EOS_ID] += len(sentences)
            out[side] = counts
        return out

    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        dataset = self.datasets[name]
        # in-batch negatives (J_bi, J_pa, SimCSE) need full batches
        drop_last = self.batch in (PAIRS, TRIPLES) and not name.startswith("test/")
        batches = len(dataset) // self.batch_size if drop_last else -(-len(dataset) // self.batch_size)
        skip = self.skip_for_epoch(self.trainer.current_epoch, batches) if shuffle and self.trainer else 0
        # The epoch's order is drawn from seed + epoch (Lightning sets the epoch), so a resume can skip to its place.
        sampler = EpochShuffledSampler(len(dataset), self.seed, shuffle)
        return SkippingDataLoader(dataset, batch_size=self.batch_size, sampler=sampler,
                                  collate_fn=collate_triples if self.batch is TRIPLES else collate_pairs,
                                  num_workers=self.num_workers,
                                  persistent_workers=self.num_workers > 0, drop_last=drop_last, skip_batches=skip)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", shuffle=False)

    def test_dataloader(self) -> list[DataLoader]:
        return [self._loader(f"test/{name}", shuffle=False) for name in self.test_cfg]

