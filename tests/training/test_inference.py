"""SentenceInference: tokens remembered for a run give the ids and vectors of a fresh tokenisation."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from lightning import LightningModule
from torch import nn

from sentence_lab.evaluation.encoders.text_encoders import EncodesLayers, HasLanguages, RemembersTokens, TextEncoder
from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.training.inference import SentenceInference, TrainedModel
from sentence_lab.training.module import SentenceModel
from sentence_lab.training.untrained import untrained_model

SENTENCES = ["The old man saw the river.", "the man .", "A river, old and wide!", "the man ."]


@pytest.fixture
def model():
    vocab = Vocab.build(Counter({"the": 3, "old": 2, "man": 2, "saw": 1, "river": 1, ".": 3}), max_size=100)
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    return untrained_model(encoder, vocab, Tokenizer("moses", True))


def test_remembered_tokens_give_the_same_ids_and_vectors_without_calling_the_tokenizer(model, monkeypatch):
    assert isinstance(model, RemembersTokens)
    want_ids = [model.token_ids(s) for s in SENTENCES]
    want = model.encode(SENTENCES)
    model.remember_tokens([*SENTENCES, "Only remembered ."])
    calls = []
    monkeypatch.setattr(type(model.tokenizer), "__call__", lambda self, s: calls.append(s) or s.split())
    assert [model.token_ids(s) for s in SENTENCES] == want_ids
    np.testing.assert_array_equal(model.encode(SENTENCES), want)
    assert calls == []
    model.encode(["a sentence nobody remembered"])  # others still go through the tokenizer
    assert calls == ["a sentence nobody remembered"]
    model.token_ids("Only remembered .")
    assert len(calls) == 1
    model.forget_tokens()
    model.token_ids("Only remembered .")  # forgotten: the tokenizer again
    assert calls[1:] == ["Only remembered ."]


@pytest.mark.parametrize("num_layers", [1, 2])
def test_encode_layers_ends_with_encodes_vectors_and_keeps_the_order(model, num_layers):
    deep = untrained_model({"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8,
                            "hidden_dim": 6, "num_layers": num_layers}, model.vocab, model.tokenizer)
    assert isinstance(deep, EncodesLayers) and deep.layers_end_with_output
    layers = deep.encode_layers(SENTENCES, batch_size=2)
    assert [v.shape for v in layers] == [(4, 8)] + [(4, 12)] * num_layers
    np.testing.assert_array_equal(layers[-1], deep.encode(SENTENCES, batch_size=2))
    one = [deep.encode_layers([s])[k][0] for s in SENTENCES for k in range(num_layers + 1)]
    np.testing.assert_allclose(np.concatenate([np.concatenate([v[i] for v in layers]) for i in range(4)]),
                               np.concatenate(one), atol=1e-6)  # a sentence's layers do not depend on its batch


def test_quick_thoughts_layers_join_f_and_g_as_its_embedding_does():
    vocab = Vocab.build(Counter({"the": 3, "man": 2, ".": 3}), max_size=100)
    encoder = {"_target_": "sentence_lab.encoders.gru.GRUEncoder", "embed_dim": 4, "hidden_dim": 3, "num_layers": 2}
    model = SentenceModel(encoder=encoder, objective={"_target_": "sentence_lab.objectives.qt.QuickThoughts"},
                          vocabs={"source": vocab}, tokenizers={"source": Tokenizer("moses", True).to_dict()}).eval()
    layers = model.encode_layers(SENTENCES)
    assert [v.shape[1] for v in layers] == [8, 6, 6]
    np.testing.assert_array_equal(layers[-1], model.encode(SENTENCES))
    f_only = model.objective.f.layer_vectors(*pad_batch([model.token_ids(SENTENCES[0])]))
    # f's half of QT's first layer; a batch of one sentence may round differently from the padded batch (1e-8 seen)
    np.testing.assert_allclose(layers[1][0, :3], f_only[1][0].detach().numpy(), atol=1e-6)


def jbi_model(target_lang: str) -> SentenceModel:
    english = Vocab.build(Counter({"the": 3, "man": 2, "river": 1, ".": 3}), max_size=100)
    french = Vocab.build(Counter({"le": 3, "homme": 2, "fleuve": 1, ".": 3}), max_size=100)
    encoder = {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": 4, "pooling": "sum"}
    return SentenceModel(encoder=encoder, objective={"_target_": "sentence_lab.objectives.jbi.JBi"},
                         vocabs={"source": english, "target": french},
                         tokenizers={"source": Tokenizer("treebank", True).to_dict(),
                                     "target": Tokenizer("moses", True, target_lang).to_dict()}).eval()


def test_a_jbi_model_offers_its_second_language_through_g():
    model = jbi_model("fr")
    assert isinstance(model, HasLanguages) and model.languages == ("en", "fr")
    assert model.in_language("en") is model and model.describe()["languages"] == ["en", "fr"]
    french = model.in_language("fr")
    assert isinstance(french, TextEncoder) and french.describe()["language"] == "fr"
    got = french.encode(["Le fleuve .", "l' homme ."])
    # g's word vectors averaged (J_bi's test-time vector, Elgohary & Carpuat 2016, section 3.2), with g's vocabulary
    table, stoi = model.objective.g.embedding.weight.detach().numpy(), model.vocabs["target"].stoi
    want = [table[[stoi["le"], stoi["fleuve"], stoi["."]]].mean(0),
            table[[stoi["<unk>"], stoi["<unk>"], stoi["homme"], stoi["."]]].mean(0)]  # Moses: l ' homme .
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-6)
    assert french.oov_rate(["l' homme ."]) == pytest.approx(2 / 4)
    assert not np.allclose(got, model.encode(["Le fleuve .", "l' homme ."]))  # f and its vocabulary are not used
    with pytest.raises(ValueError, match="encodes en, fr, not 'de'.*objective=jbi"):
        model.in_language("de")


def test_one_language_models_have_one_language():
    assert jbi_model("en").languages == ("en",)  # a second encoder of the same language is no second language
    vocab = Vocab.build(Counter({"the": 3, ".": 3}), max_size=100)
    qt = SentenceModel(encoder={"_target_": "sentence_lab.encoders.gru.GRUEncoder", "embed_dim": 4, "hidden_dim": 3},
                       objective={"_target_": "sentence_lab.objectives.qt.QuickThoughts"}, vocabs={"source": vocab},
                       tokenizers={"source": Tokenizer("moses", True).to_dict()})
    assert qt.languages == ("en",) and "languages" not in qt.describe()


@pytest.mark.parametrize("objective", ["qt", "jbi"])
def test_a_trained_model_reads_a_sentence_models_checkpoint_without_lightning(objective, tmp_path):
    """``TrainedModel`` builds the modules ``SentenceModel`` trains under the same names: the checkpoint's weights load
    strictly and give the same vectors, layers, second language and description; no LightningModule is involved."""
    torch.manual_seed(0)
    if objective == "jbi":
        trained = jbi_model("fr")
    else:
        vocab = Vocab.build(Counter({"the": 3, "man": 2, ".": 3}), max_size=100)
        trained = SentenceModel(encoder={"_target_": "sentence_lab.encoders.gru.GRUEncoder", "embed_dim": 4,
                                         "hidden_dim": 3, "num_layers": 2},
                                objective={"_target_": "sentence_lab.objectives.qt.QuickThoughts"},
                                vocabs={"source": vocab}, tokenizers={"source": Tokenizer("moses", True).to_dict()},
                                optimizer={"_target_": "torch.optim.Adam", "lr": 0.01}, encoder_lr_scale=0.5).eval()
    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": trained.state_dict(), "hyper_parameters": dict(trained.hparams),
                "vocabs": {side: v.itos for side, v in trained.vocabs.items()}}, path)
    loaded = TrainedModel.load_checkpoint(str(path), map_location="cpu")
    assert not isinstance(loaded, LightningModule)
    assert type(loaded).__mro__[1:] == (SentenceInference, nn.Module, object)
    assert list(loaded.state_dict()) == list(trained.state_dict())
    assert loaded.hparams == dict(trained.hparams) and loaded.describe() == trained.describe()
    assert loaded.device == torch.device("cpu")
    np.testing.assert_array_equal(loaded.encode(SENTENCES), trained.encode(SENTENCES))
    for ours, theirs in zip(loaded.encode_layers(SENTENCES), trained.encode_layers(SENTENCES)):
        np.testing.assert_array_equal(ours, theirs)
    if objective == "jbi":
        french = ["le homme .", "le fleuve ."]
        np.testing.assert_array_equal(loaded.in_language("fr").encode(french), trained.in_language("fr").encode(french))
