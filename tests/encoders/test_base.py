"""The one rule that says which encoder configs are trainable, checked on every config the project ships; the
max-pooling the encoders share; two sides encoded in one pass."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

from sentence_lab.encoders.base import SentenceEncoder, encode_together, encoder_class, is_trainable, max_over
from sentence_lab.evaluation.encoders.baselines import LengthEncoder
from sentence_lab.evaluation.encoders.text_encoders import TextEncoder
from sentence_lab.text.padding import pad_batch

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


def test_two_sides_in_one_pass_get_the_vectors_of_a_pass_each(trainable_config_name, vocab, build_encoder):
    """Sides of different widths and sizes, 70 sentences together (the CPU's recurrent path then runs length buckets
    over both sides' sentences at once): each side's vectors as its own pass gives them, in its order."""
    encoder = build_encoder(trainable_config_name).eval()
    g = torch.Generator().manual_seed(3)
    side_a = pad_batch([torch.randint(4, len(vocab), (int(n),), generator=g).tolist()
                        for n in torch.randint(1, 12, (40,), generator=g)])
    side_b = pad_batch([torch.randint(4, len(vocab), (int(n),), generator=g).tolist()
                        for n in torch.randint(1, 6, (30,), generator=g)])
    assert side_a[0].size(1) > side_b[0].size(1)
    with torch.no_grad():
        together = encode_together(encoder, side_a, side_b)
        apart = [encoder(*side_a), encoder(*side_b)]
    assert [v.shape for v in together] == [(40, encoder.output_dim), (30, encoder.output_dim)]
    for joint, alone in zip(together, apart):
        # float rounding only: another batch shape sums in another order (1.5e-6 on the transformer's LayerNorm-ed
        # vectors with two threads)
        torch.testing.assert_close(joint, alone, atol=1e-6, rtol=1e-5)


def test_one_pass_carries_gradients_to_both_sides(vocab, build_encoder):
    encoder = build_encoder("bilstm_max", ["freeze_embeddings=false", "embedding_init=random"])
    side_a, side_b = pad_batch([[4, 5, 6], [7]]), pad_batch([[8, 9]])
    u, v = encode_together(encoder, side_a, side_b)
    (u.sum() + 2 * v.sum()).backward()
    expected = {p: p.grad.clone() for p in encoder.parameters()}
    encoder.zero_grad()
    (encoder(*side_a).sum() + 2 * encoder(*side_b).sum()).backward()
    for p in encoder.parameters():
        torch.testing.assert_close(p.grad, expected[p], atol=1e-6, rtol=1e-5)
