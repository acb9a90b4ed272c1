"""NMT, sequence to sequence without attention (the probing paper's NMT, Conneau et al. 2018, section 3.2): the
sentence vector is all a recurrent decoder sees of the source. ``objective=autoencoder`` is the same model
(``sentence_lab.objectives.autoencoder``)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import sacrebleu
import torch

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import PAIRS, ObjectiveSpec, SentenceObjective
from sentence_lab.objectives.decoders import GRUDecoder, check_output_bias, token_mean
from sentence_lab.objectives.noise import sdae_noise
from sentence_lab.text import PAD_ID, UNK_ID, Vocab


def detokenized(ids: list[int], vocab: Vocab, drop_unknown: bool) -> str:
    """Token ids -> the space-joined tokens (what BLEU compares); ``<unk>`` dropped from hypotheses so an
    unknown word never earns credit."""
    return " ".join(vocab.itos[i] for i in ids if i != PAD_ID and not (drop_unknown and i == UNK_ID))


class Seq2Seq(SentenceObjective):
    """NMT: encoder ``f`` over the source vocabulary; ``GRUDecoder`` over the target vocabulary (its
    ``decoder_vocab_size`` most frequent words) generates side b. Loss: token cross-entropy averaged over real
    target tokens. Validation also decodes greedily the first ``bleu_sentences`` pairs and reports corpus
    BLEU (sacrebleu, on the tokenised lowercased text: ``tokenize="none"``) as ``val/bleu``. Embedding: ``f(s)``.
    ``noise_delete`` / ``noise_swap``: while training, the encoder reads its source with Hill et al. 2016's SDAE
    noise (``sentence_lab.objectives.noise.sdae_noise``); the decoder still generates the clean target.
    """

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(PAIRS, ("source", "target"), "val/bleu", "max", "multi30k_en_fr")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping,
                 decoder_vocab_size: int = 20000, embed_dim: int = 128, hidden_dim: int = 512,
                 condition: str = "both", dropout: float = 0.0, bleu_sentences: int = 1000,
                 max_decode_len: int = 50, condition_norm: bool = False, output_bias: str = "zero",
                 word_dropout: float = 0.0, noise_delete: float = 0.0, noise_swap: float = 0.0) -> None:
        super().__init__()
        if not (0.0 <= noise_delete < 1.0 and 0.0 <= noise_swap <= 1.0):
            raise ValueError(f"objective.noise_delete={noise_delete}, noise_swap={noise_swap}: use probabilities")
        self.noise_delete, self.noise_swap = noise_delete, noise_swap
        self.output_bias = check_output_bias(output_bias)
        self.f = encoder_factory()
        self.output_dim = self.f.output_dim
        self.target_vocab: Vocab = vocabs[self._target_side()]
        size = min(decoder_vocab_size, len(self.target_vocab))
        self.decoder = GRUDecoder(size, self.output_dim, embed_dim, hidden_dim, condition, dropout, condition_norm,
                                  word_dropout)
        self.bleu_sentences, self.max_decode_len = bleu_sentences, max_decode_len
        self._hypotheses: list[str] = []
        self._references: list[str] = []

    def init_from_unigram_counts(self, counts: Mapping[str, torch.Tensor]) -> None:
        """``output_bias: log_unigram``: the decoder's output bias starts at the log frequencies of the targets."""
        if self.output_bias == "log_unigram":
            self.decoder.init_output_bias(counts[self._target_side()])

    @staticmethod
    def _target_side() -> str:
        return "target"

    @staticmethod
    def sides(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """(source tokens, source lengths, target tokens, target lengths)."""
        return batch["a_tokens"], batch["a_lengths"], batch["b_tokens"], batch["b_lengths"]

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        src, src_len, tgt, tgt_len = self.sides(batch)
        if self.training and (self.noise_delete > 0 or self.noise_swap > 0):
            src, src_len = sdae_noise(src, src_len, self.noise_delete, self.noise_swap)
        return token_mean(*self.decoder.loss(self.f(src, src_len), tgt, tgt_len))

    def evaluation_step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The loss, and greedy translations of this batch while fewer than ``bleu_sentences`` were decoded."""
        src, src_len, tgt, tgt_len = self.sides(batch)
        vectors = self.f(src, src_len)
        room = self.bleu_sentences - len(self._hypotheses)
        if room > 0:
            take = min(room, vectors.shape[0])
            for row, hyp in enumerate(self.decoder.greedy(vectors[:take], self.max_decode_len)):
                self._hypotheses.append(detokenized(hyp, self.target_vocab, drop_unknown=True))
                ref = tgt[row, : int(tgt_len[row])].tolist()
                self._references.append(detokenized(ref, self.target_vocab, drop_unknown=False))
        return token_mean(*self.decoder.loss(vectors, tgt, tgt_len))

    def corpus_metrics(self) -> dict[str, float]:
        """BLEU of what ``evaluation_step`` decoded since the last call (then forgotten)."""
        hypotheses, references = self._hypotheses, self._references
        self._hypotheses, self._references = [], []
        if not hypotheses:
            return {}
        return {"bleu": float(sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score)}

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.f(tokens, lengths)

