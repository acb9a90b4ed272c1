"""``plain``: what a class keeps of a configured value."""
from omegaconf import OmegaConf

from sentence_lab.text.config_values import plain


def test_nodes_become_plain_containers_with_interpolations_resolved():
    cfg = OmegaConf.create({"a": 2, "b": {"c": "${a}", "d": [1, "${a}"]}})
    assert plain(cfg.b) == {"c": 2, "d": [1, 2]}
    assert type(plain(cfg.b)) is dict and type(plain(cfg.b)["d"]) is list
    assert plain(cfg.b.d) == [1, 2] and type(plain(cfg.b.d)) is list


def test_other_values_pass_through_unchanged():
    value = {"x": [1]}
    assert plain(value) is value and plain(None) is None and plain(3) == 3
