"""NMT and the autoencoder: both sides, BLEU over what validation decoded, unknown words never credited."""
from __future__ import annotations

import sacrebleu
import torch

from sentence_lab.objectives.autoencoder import AutoEncoder
from sentence_lab.objectives.nmt import Seq2Seq, detokenized
from sentence_lab.text import PAD_ID, SPECIALS, UNK_ID, Vocab
from tests.helpers.toy import sum_encoder

SRC = Vocab(list(SPECIALS) + ["the", "cat", "sat"])
TGT = Vocab(list(SPECIALS) + ["le", "chat", "assis", "dort"])


def test_detokenized_drops_unknown_words_from_hypotheses_only():
    ids = [4, UNK_ID, 5, PAD_ID]
    assert detokenized(ids, TGT, drop_unknown=True) == "le chat"
    assert detokenized(ids, TGT, drop_unknown=False) == "le <unk> chat"


def small_model(cls=Seq2Seq, **kwargs):
    model = cls(lambda side="source": sum_encoder({4: [1.0, 0.0]}, SRC),
                {"source": SRC, "target": TGT}, embed_dim=3, hidden_dim=4, **kwargs)
    return model


def test_validation_decodes_at_most_bleu_sentences_and_scores_them():
    model = small_model(bleu_sentences=3, max_decode_len=2)
    with torch.no_grad():
        model.decoder.output.weight.zero_()
        model.decoder.output.bias.fill_(-10.0)
        model.decoder.output.bias[4] = 10.0  # always "le"
    batch = {"a_tokens": torch.tensor([[4, 5], [6, 0]]), "a_lengths": torch.tensor([2, 1]),
             "b_tokens": torch.tensor([[4, 4], [5, 0]]), "b_lengths": torch.tensor([2, 1])}
    for _ in range(2):
        out = model.evaluation_step(batch)
    assert set(out) == {"loss", "ppl", "token_acc"}
    assert model._hypotheses == ["le le"] * 3
    assert model._references == ["le le", "chat", "le le"]
    expected = sacrebleu.corpus_bleu(["le le"] * 3, [["le le", "chat", "le le"]], tokenize="none").score
    assert model.corpus_metrics()["bleu"] == expected
    assert model.corpus_metrics() == {}  # collected hypotheses are consumed


def test_perfect_translations_score_100():
    model = small_model()
    sentence = "le chat dort sur le tapis rouge"
    model._hypotheses, model._references = [sentence] * 2, [sentence] * 2
    assert round(model.corpus_metrics()["bleu"], 6) == 100.0


def test_autoencoder_regenerates_its_input_over_one_vocabulary():
    model = AutoEncoder(lambda side="source": sum_encoder({4: [1.0, 0.0]}, SRC), {"source": SRC},
                        embed_dim=3, hidden_dim=4)
    assert model.target_vocab is SRC and model.decoder.vocab_size == len(SRC)
    batch = {"tokens": torch.tensor([[4, 5, 6]]), "lengths": torch.tensor([3]), "doc_ids": torch.tensor([0])}
    src, _, tgt, _ = model.sides(batch)
    assert src is tgt
    out = model(batch)
    assert torch.isfinite(out["loss"])
