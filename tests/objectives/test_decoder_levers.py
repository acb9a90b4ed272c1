"""The decoder levers of the decoding objectives: a log-unigram output bias and a layer-normalised condition."""
from __future__ import annotations

import math

import pytest
import torch

from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.objectives.autoencoder import AutoEncoder
from sentence_lab.objectives.contract import LearnsFromUnigramCounts
from sentence_lab.objectives.decoders import GRUDecoder
from sentence_lab.objectives.skipthought import SkipThought
from sentence_lab.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab

WORDS = ["<pad>", "<unk>", "<s>", "</s>", "the", "cat", "sat", "mat"]


def test_the_output_bias_starts_at_the_smoothed_log_frequencies_with_rare_words_as_unknown():
    decoder = GRUDecoder(vocab_size=6, condition_dim=4, embed_dim=3, hidden_dim=5)
    counts = torch.tensor([0, 2, 0, 10, 30, 20, 7, 3])  # ids 6 and 7 lie beyond the decoder's 6 words: <unk>
    decoder.init_output_bias(counts)
    smoothed = {UNK_ID: 2 + 7 + 3 + 1, 3: 11, 4: 31, 5: 21, PAD_ID: 1e-3, BOS_ID: 1e-3}
    total = sum(smoothed.values())
    for word, count in smoothed.items():
        assert decoder.output.bias[word].item() == pytest.approx(math.log(count / total), rel=1e-5)
    probs = torch.softmax(decoder.output.bias, 0)  # a decoder whose states are zero predicts the unigram law
    assert probs.sum().item() == pytest.approx(1.0)


def test_a_normalised_condition_ignores_the_vectors_scale_and_shared_offset():
    torch.manual_seed(0)
    decoder = GRUDecoder(vocab_size=8, condition_dim=6, embed_dim=3, hidden_dim=5, condition="both",
                         condition_norm=True)
    condition = torch.randn(2, 6)
    inputs = torch.randint(4, 8, (2, 5))
    same = decoder.hidden_states(3.0 * condition + 7.0, inputs)
    torch.testing.assert_close(decoder.hidden_states(condition, inputs), same, atol=1e-4, rtol=1e-4)
    plain = GRUDecoder(vocab_size=8, condition_dim=6, embed_dim=3, hidden_dim=5, condition="both")
    assert not torch.allclose(plain.hidden_states(condition, inputs), plain.hidden_states(3.0 * condition + 7.0,
                                                                                          inputs))


@pytest.mark.parametrize("objective_class", [SkipThought, AutoEncoder])
def test_decoding_objectives_take_the_counts_only_when_asked(objective_class):
    vocab = Vocab(WORDS)
    build = lambda output_bias: objective_class(  # noqa: E731
        encoder_factory=lambda side="source": BagOfWordsEncoder(vocab=vocab, embed_dim=4, embedding_init="random"),
        vocabs={"source": vocab, "target": vocab}, decoder_vocab_size=8, embed_dim=3, hidden_dim=5,
        output_bias=output_bias)
    counts = {"source": torch.tensor([0, 1, 0, 5, 9, 4, 2, 2])}
    for output_bias, changed in (("zero", False), ("log_unigram", True)):
        objective = build(output_bias)
        assert isinstance(objective, LearnsFromUnigramCounts)
        decoders = list(objective.decoders.values()) if hasattr(objective, "decoders") else [objective.decoder]
        before = [d.output.bias.clone() for d in decoders]
        objective.init_from_unigram_counts(counts)
        assert all(not torch.equal(b, d.output.bias) for b, d in zip(before, decoders)) == changed
    with pytest.raises(ValueError, match="output_bias"):
        build("uniform")


class _Recording(torch.nn.Module):
    """An encoder that remembers the ids it was given."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner, self.output_dim = inner, inner.output_dim
        self.seen: list[list[list[int]]] = []  # per call, each sentence's ids

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        self.seen.append([t[:n].tolist() for t, n in zip(tokens, lengths.tolist())])
        return self.inner(tokens, lengths)


def test_the_autoencoder_reads_a_noisy_source_only_while_training():
    vocab = Vocab(WORDS)
    objective = AutoEncoder(
        encoder_factory=lambda side="source": _Recording(BagOfWordsEncoder(vocab=vocab, embed_dim=4,
                                                                            embedding_init="random")),
        vocabs={"source": vocab}, decoder_vocab_size=8, embed_dim=3, hidden_dim=5, noise_swap=1.0)
    batch = {"tokens": torch.tensor([[4, 5, 6, 7]]), "lengths": torch.tensor([4])}
    objective.train()
    objective(batch)
    objective.eval()
    objective(batch)
    assert objective.f.seen == [[[5, 4, 7, 6]], [[4, 5, 6, 7]]]


def test_decoder_word_dropout_acts_only_while_training():
    torch.manual_seed(0)
    decoder = GRUDecoder(vocab_size=8, condition_dim=4, embed_dim=3, hidden_dim=5, word_dropout=0.5)
    condition, tokens, lengths = torch.randn(3, 4), torch.randint(4, 8, (3, 6)), torch.tensor([6, 5, 4])
    decoder.eval()
    clean = decoder.loss(condition, tokens, lengths)[0]
    assert torch.equal(decoder.loss(condition, tokens, lengths)[0], clean)
    decoder.train()
    assert not torch.equal(decoder.loss(condition, tokens, lengths)[0], clean)
    with pytest.raises(ValueError, match="word_dropout"):
        GRUDecoder(vocab_size=8, condition_dim=4, word_dropout=1.0)


@pytest.mark.parametrize("read_words", [True, False])
def test_a_decoder_that_reads_no_words_sees_only_unknown_in_training_validation_and_decoding(read_words):
    torch.manual_seed(0)
    decoder = GRUDecoder(vocab_size=8, condition_dim=4, embed_dim=3, hidden_dim=5, read_words=read_words)
    read: list[set[int]] = []
    decoder.embedding.register_forward_hook(lambda module, args, out: read.append(set(args[0].flatten().tolist())))
    condition, tokens, lengths = torch.randn(3, 4), torch.randint(4, 8, (3, 6)), torch.tensor([6, 5, 4])
    decoder.train()
    decoder.loss(condition, tokens, lengths)
    decoder.eval()
    decoder.loss(condition, tokens, lengths)
    with torch.no_grad():
        decoder.output.bias.copy_(torch.tensor([-9.0, -9, -9, -9, -9, 9, -9, -9]))  # greedy always says word 5
    decoder.greedy(condition, max_len=4)
    words = set().union(*read) - {PAD_ID, BOS_ID}
    assert (words == {UNK_ID}) if not read_words else (words >= {5} and words - {UNK_ID})


def test_a_decoder_that_reads_no_words_predicts_a_word_the_same_whatever_came_before():
    torch.manual_seed(0)
    decoder = GRUDecoder(vocab_size=8, condition_dim=4, embed_dim=3, hidden_dim=5, read_words=False).eval()
    condition, lengths = torch.randn(1, 4), torch.tensor([3])
    first = decoder.loss(condition, torch.tensor([[4, 5, 6]]), lengths)[0]
    second = decoder.loss(condition, torch.tensor([[7, 7, 6]]), lengths)[0]
    states = decoder.hidden_states(condition, torch.tensor([[BOS_ID, UNK_ID, UNK_ID, UNK_ID]]))
    logp = decoder.output(states[0]).log_softmax(-1)
    by_hand = lambda words: -sum(float(logp[i, w]) for i, w in enumerate(words))  # noqa: E731
    assert float(first) == pytest.approx(by_hand([4, 5, 6, EOS_ID]), rel=1e-5)
    assert float(second) == pytest.approx(by_hand([7, 7, 6, EOS_ID]), rel=1e-5)
