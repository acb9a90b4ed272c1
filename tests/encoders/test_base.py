"""The one rule that says which encoder configs are trainable, checked on every config the project ships; the
max-pooling the encoders share."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

from sentence_lab.encoders.base import SentenceEncoder, encoder_class, is_trainable, max_over
from sentence_lab.evaluation.baselines import LengthEncoder
from sentence_lab.evaluation.text_encoders import TextEncoder

CONF = Path(__file__).resolve().parents[2] / "conf" / "encoder"
EVALUATION_ONLY = {"bow_glove", "length", "nb_uni_tfidf", "nb_bi_tfidf", "minilm", "sentence_transformers",
                   "precomputed", "callable"}


@pytest.mark.parametrize("config", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_each_shipped_encoder_is_trainable_or_evaluation_only(config):
    with initialize_config_dir(config_dir=str(CONF.parent), version_base="1.3"):
        target = compose(overrides=[f"+encoder={config}"]).encoder["_target_"]
    cls = encoder_class(target)
    if config in EVALUATION_ONLY:
        assert not is_trainable(target)
        assert callable(getattr(cls, "describe", None))  # and encodes sentences, or runs whole tasks (NB-tfidf):
        assert callable(getattr(cls, "encode", None)) or callable(getattr(cls, "run_task", None))
    else:
        assert is_trainable(target) and issubclass(cls, SentenceEncoder)


def test_an_evaluation_only_instance_speaks_the_engine_protocol():
    assert isinstance(LengthEncoder(), TextEncoder)


def test_an_unimportable_target_is_one_line():
    with pytest.raises(ValueError, match="encoder _target_ 'sentence_lab.encoders.nope.Missing' cannot be imported"):
        is_trainable("sentence_lab.encoders.nope.Missing")


def test_max_over_gives_the_maximum_and_training_gives_a_ties_gradient_to_one_position():
    x = torch.tensor([[[1.0, 5.0], [3.0, 5.0], [3.0, -1.0]]])  # [B=1, T=3, C=2]: ties at the maximum in both columns
    with torch.no_grad():
        assert torch.equal(max_over(x, dim=1), torch.tensor([[3.0, 5.0]]))
    leaf = x.clone().requires_grad_()
    pooled = max_over(leaf, dim=1)
    assert torch.equal(pooled, torch.tensor([[3.0, 5.0]]))
    pooled.sum().backward()
    assert leaf.grad.sum(dim=1).tolist() == [[1.0, 1.0]] and set(leaf.grad.flatten().tolist()) == {0.0, 1.0}
