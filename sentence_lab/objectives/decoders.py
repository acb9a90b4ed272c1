"""The recurrent decoder skip-thought, NMT and the autoencoder share: a GRU language model conditioned on a
sentence vector, trained by teacher forcing and decoded greedily. No attention: it would let the decoder
read the source words and bypass the sentence vector (Conneau et al. 2018, section 3.2)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import length_mask
from sentence_lab.objectives.noise import word_dropout
from sentence_lab.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID

CONDITIONINGS = ("init", "input", "both")
OUTPUT_BIASES = ("zero", "log_unigram")


def check_output_bias(output_bias: str) -> str:
    """``zero`` (PyTorch's default initialisation) or ``log_unigram`` (the targets' log frequencies)."""
    if output_bias not in OUTPUT_BIASES:
        raise ValueError(f"objective.output_bias={output_bias!r}: use one of {OUTPUT_BIASES}")
    return output_bias


def decoder_io(tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Teacher forcing: inputs ``<s> w1 .. wn`` and targets ``w1 .. wn </s>``, both ``n + 1`` long, padded."""
    batch, width = tokens.shape[0], int(lengths.max()) + 1
    inputs = tokens.new_full((batch, width), PAD_ID)
    targets = tokens.new_full((batch, width), PAD_ID)
    inputs[:, 0] = BOS_ID
    real = length_mask(lengths, width - 1)
    body = tokens[:, : width - 1].masked_fill(~real, PAD_ID)
    inputs[:, 1:] = body
    targets[:, : width - 1] = body
    targets[torch.arange(batch, device=tokens.device), lengths] = EOS_ID
    return inputs, targets, lengths + 1


def clip_vocabulary(tokens: torch.Tensor, size: int) -> torch.Tensor:
    """Ids beyond the decoder's output vocabulary (the ``size`` most frequent words) become ``<unk>``."""
    return tokens.masked_fill(tokens >= size, UNK_ID)


class GRUDecoder(nn.Module):
    """A GRU over target words whose ``condition`` (a sentence vector) sets the initial state (``init``,
    through a tanh layer, as in seq2seq without attention), is appended to every input word (``input``:
    Kiros et al. 2015, section 2, condition every step of the decoder on the encoder's vector), or both.
    ``condition_norm``: the condition goes through layer normalisation first (Ba et al. 2016 trained
    skip-thought with it), so its norm and any direction shared by every sentence carry nothing the decoder
    can use as a bias. ``word_dropout``: while training, each input word becomes ``<unk>`` with this probability
    (``sentence_lab.objectives.noise.word_dropout``). ``read_words=False``: every input word is ``<unk>``, in training,
    validation
    and greedy decoding alike, so the decoder predicts each target word from the condition and the position alone
    and cannot act as a language model that ignores the condition.
    """

    def __init__(self, vocab_size: int, condition_dim: int, embed_dim: int = 128, hidden_dim: int = 512,
                 condition: str = "both", dropout: float = 0.0, condition_norm: bool = False,
                 word_dropout: float = 0.0, read_words: bool = True) -> None:
        super().__init__()
        self.read_words = read_words
        if not 0.0 <= word_dropout < 1.0:
            raise ValueError(f"objective.word_dropout={word_dropout}: use a probability in [0, 1)")
        self.word_dropout = word_dropout
        if condition not in CONDITIONINGS:
            raise ValueError(f"unknown decoder condition {condition!r}: use one of {CONDITIONINGS}")
        self.vocab_size, self.condition = vocab_size, condition
        self.condition_norm = nn.LayerNorm(condition_dim) if condition_norm else nn.Identity()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        feeds = condition in ("input", "both")
        self.init_state = nn.Linear(condition_dim, hidden_dim) if condition in ("init", "both") else None
        self.gru = nn.GRU(embed_dim + (condition_dim if feeds else 0), hidden_dim, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_dim, vocab_size)

    @torch.no_grad()
    def init_output_bias(self, counts: torch.Tensor) -> None:
        """Set the output layer's bias to the log unigram frequencies of the targets (add-one smoothed; words
        beyond the decoder's vocabulary count as ``<unk>``), so the sentence vector need not carry them."""
        counts = counts.double().to(self.output.bias.device)
        clipped = counts[: self.vocab_size].clone()
        clipped[UNK_ID] += counts[self.vocab_size:].sum()
        clipped += 1.0
        clipped[PAD_ID] = clipped[BOS_ID] = 1e-3  # never targets
        self.output.bias.copy_((clipped / clipped.sum()).log().to(self.output.bias.dtype))

    def _initial_state(self, condition: torch.Tensor) -> torch.Tensor | None:
        return torch.tanh(self.init_state(condition)).unsqueeze(0) if self.init_state is not None else None

    def _inputs(self, words: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.embedding(words))
        if self.condition == "init":
            return x
        return torch.cat([x, condition.unsqueeze(1).expand(-1, x.shape[1], -1)], dim=2)

    def hidden_states(self, condition: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: ``[B, T, hidden]`` states after each input word."""
        condition = self.condition_norm(condition)
        states, _ = self.gru(self._inputs(inputs, condition), self._initial_state(condition))
        return states

    def loss(self, condition: torch.Tensor, tokens: torch.Tensor, lengths: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Summed token cross-entropy of generating ``tokens`` (then ``</s>``), the number of target tokens
        and how many the argmax got right. Padding positions are never projected onto the vocabulary."""
        inputs, targets, target_lengths = decoder_io(clip_vocabulary(tokens, self.vocab_size), lengths)
        if not self.read_words:
            inputs = inputs.masked_fill((inputs != PAD_ID) & (inputs != BOS_ID), UNK_ID)
        elif self.training:
            inputs = word_dropout(inputs, self.word_dropout)
        states = self.hidden_states(condition, inputs)
        real = length_mask(target_lengths, targets.shape[1])
        logits = self.output(self.dropout(states[real]))  # [real tokens, V]
        gold = targets[real]
        nll = F.cross_entropy(logits, gold, reduction="sum")
        correct = (logits.argmax(1) == gold).sum()
        return nll, real.sum(), correct

    @torch.no_grad()
    def greedy(self, condition: torch.Tensor, max_len: int = 50) -> list[list[int]]:
        """The most likely word at each step, fed back, until ``</s>`` (not included) or ``max_len`` words."""
        batch = condition.shape[0]
        condition = self.condition_norm(condition)
        state = self._initial_state(condition)
        words = condition.new_full((batch, 1), BOS_ID, dtype=torch.long)
        out = condition.new_zeros((batch, max_len), dtype=torch.long)
        done = torch.zeros(batch, dtype=torch.bool, device=condition.device)
        lengths = torch.full((batch,), max_len, dtype=torch.long, device=condition.device)
        for step in range(max_len):
            hidden, state = self.gru(self._inputs(words, condition), state)
            words = self.output(hidden[:, -1]).argmax(1, keepdim=True)
            out[:, step] = words[:, 0]
            if not self.read_words:
                words = torch.full_like(words, UNK_ID)
            ended = (words[:, 0] == EOS_ID) & ~done
            lengths[ended] = step
            done |= ended
            if bool(done.all()):
                break
        return [row[:n].tolist() for row, n in zip(out.cpu(), lengths.cpu().tolist())]


def token_mean(nll: torch.Tensor, n_tokens: torch.Tensor, correct: torch.Tensor) -> dict[str, torch.Tensor]:
    """Loss averaged over real target tokens, its perplexity and the token accuracy."""
    count = n_tokens.clamp(min=1).to(nll.dtype)
    loss = nll / count
    return {"loss": loss, "ppl": torch.exp(loss.detach()), "token_acc": correct.to(nll.dtype) / count}
