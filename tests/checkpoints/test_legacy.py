"""Older checkpoints read as today's: bare folder names and classes that moved to the module named as their config."""
from __future__ import annotations

from hydra.utils import get_class

from sentence_lab.checkpoints.legacy import MOVED_CLASSES, namespaced_targets, saved_vocabs


def test_bare_names_and_moved_classes_become_todays_targets():
    hparams = {"encoder": {"_target_": "encoders.gru.GRUEncoder", "hidden_dim": 8},
               "objective": {"_target_": "objectives.quick_thoughts.QuickThoughts", "context_size": 3},
               "optimizer": {"_target_": "torch.optim.Adam", "lr": 0.001},
               "list": [{"_target_": "sentence_lab.objectives.hinge.JPa"}, "text.vocab"]}
    assert namespaced_targets(hparams) == {
        "encoder": {"_target_": "sentence_lab.encoders.gru.GRUEncoder", "hidden_dim": 8},
        "objective": {"_target_": "sentence_lab.objectives.qt.QuickThoughts", "context_size": 3},
        "optimizer": {"_target_": "torch.optim.Adam", "lr": 0.001},
        "list": [{"_target_": "sentence_lab.objectives.jpa.JPa"}, "text.vocab"]}


def test_every_moved_class_is_where_the_map_says_and_is_the_one_its_config_builds():
    for old, new in MOVED_CLASSES.items():
        moved = get_class(new)
        assert moved.__name__ == old.rsplit(".", 1)[1] == new.rsplit(".", 1)[1]
        assert new.split(".")[2] in ("qt", "nmt", "autoencoder", "jbi", "jpa")


def test_one_vocabulary_under_vocab_is_the_source_side():
    assert saved_vocabs({"vocab": ["<pad>", "a"]}) == {"source": ["<pad>", "a"]}
    assert saved_vocabs({"vocabs": {"source": ["x"], "target": ["y"]}}) == {"source": ["x"], "target": ["y"]}
    assert saved_vocabs({}) == {}
