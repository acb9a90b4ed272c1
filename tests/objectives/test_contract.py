"""The objective/data contract: every objective declares what it consumes; mismatches fail in one line."""
from __future__ import annotations

import pytest
import torch

from sentence_lab.datamodules.ordered_corpus import OrderedCorpusDataModule
from sentence_lab.datamodules.pairs import PairsDataModule
from sentence_lab.objectives.autoencoder import AutoEncoder
from sentence_lab.objectives.contract import BATCH_SPECS, SentenceObjective, check_pairing, spec_of
from sentence_lab.objectives.jbi import JBi
from sentence_lab.objectives.jpa import JPa
from sentence_lab.objectives.nli import NLI
from sentence_lab.objectives.nmt import Seq2Seq
from sentence_lab.objectives.qt import QuickThoughts
from sentence_lab.objectives.simcse import SimCSE
from sentence_lab.objectives.skipthought import SkipThought
from sentence_lab.text import SPECIALS, Tokenizer, Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.training.module import SentenceModel

OBJECTIVES = {"qt": QuickThoughts, "skipthought": SkipThought, "nli": NLI, "nmt": Seq2Seq,
              "autoencoder": AutoEncoder, "jbi": JBi, "jpa": JPa, "simcse": SimCSE}


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_every_objective_declares_a_batch_vocabularies_a_monitor_and_an_existing_default_data(name):
    from pathlib import Path

    spec = OBJECTIVES[name].spec
    assert spec_of(OBJECTIVES[name], {}) is spec  # its settings' defaults consume what it declares
    assert spec.batch in BATCH_SPECS.values()
    assert spec.vocabularies[0] == "source" and set(spec.vocabularies) <= {"source", "target"}
    assert spec.monitor.startswith("val/") and spec.monitor_mode in ("min", "max")
    assert (Path(__file__).resolve().parents[2] / "conf" / "data" / f"{spec.default_data}.yaml").is_file()


def sentences_data(tmp_path) -> OrderedCorpusDataModule:
    return OrderedCorpusDataModule(str(tmp_path), str(tmp_path), str(tmp_path))


def pairs_data(tmp_path, **kwargs) -> PairsDataModule:
    return PairsDataModule(train={"format": "tsv", "path": "x"}, cache_dir=str(tmp_path), **kwargs)


def test_mismatched_batch_names_a_data_config_that_fits(tmp_path):
    with pytest.raises(ValueError, match=r"objective=nli consumes labelled_pairs batches but data=books yields "
                                         r"sentences: use data=nli"):
        check_pairing("nli", NLI.spec, "books", sentences_data(tmp_path))
    with pytest.raises(ValueError, match="use data=multi30k_en_fr"):
        check_pairing("nmt", Seq2Seq.spec, "nli", pairs_data(tmp_path, labels=["a", "b"]))
    with pytest.raises(ValueError, match="use data=books"):
        check_pairing("skipthought", SkipThought.spec, "tatoeba_en_es", pairs_data(tmp_path))


def test_one_encoder_on_both_sides_needs_a_shared_vocabulary(tmp_path):
    with pytest.raises(ValueError, match="data.shared_vocab=true"):
        check_pairing("jpa", JPa.spec, "tatoeba_en_es", pairs_data(tmp_path, shared_vocab=False))
    check_pairing("jpa", JPa.spec, "ppdb2_human", pairs_data(tmp_path, shared_vocab=True))
    check_pairing("jbi", JBi.spec, "tatoeba_en_es", pairs_data(tmp_path, shared_vocab=False))
    check_pairing("autoencoder", AutoEncoder.spec, "books", sentences_data(tmp_path))


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_every_objectives_layers_end_with_its_embedding(name):
    """``embed_layers`` (the per-layer view of the suite) ends with ``embed``'s vectors, one layer per depth."""
    vocab = Vocab([*SPECIALS, "a", "b", "c", "d"])
    cls = OBJECTIVES[name]
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 4, "hidden_dim": 3,
               "num_layers": 2, "dropout": 0.1}  # simcse's two views need dropout
    torch.manual_seed(0)
    model = SentenceModel(encoder=encoder, objective={"_target_": f"{cls.__module__}.{cls.__name__}"},
                          vocabs={side: vocab for side in cls.spec.vocabularies},
                          tokenizers={side: Tokenizer("moses", True).to_dict() for side in cls.spec.vocabularies})
    model.eval()
    tokens, lengths = pad_batch([[4, 5, 6], [7], [5, 5]])
    with torch.no_grad():
        layers = model.objective.embed_layers(tokens, lengths)
        assert len(layers) == 3 and torch.equal(layers[-1], model.objective.embed(tokens, lengths))


def test_every_objective_is_a_sentence_objective_and_only_those_joining_encoders_read_layers_their_own_way():
    """The contract's ``embed_layers`` (``f``'s layers) is every objective's unless its ``embed`` joins encoders:
    Quick-Thoughts (f and g concatenated) and the pair hinge (its test-time mean of a summing BoW)."""
    own = {name for name, cls in OBJECTIVES.items() if cls.embed_layers is not SentenceObjective.embed_layers}
    assert all(issubclass(cls, SentenceObjective) for cls in OBJECTIVES.values())
    assert own == {"qt", "jbi", "jpa"}
