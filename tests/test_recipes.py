"""The shipped recipes (conf/experiment/) are a fixed amount of work: their results must not depend on how busy
the machine was."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
IDLE_TIME = re.compile(r"\b\d+(\.\d+)? (minutes?|hours?) (of training )?on (these )?two (idle )?CPU cores", re.I)


def composed_trainer(recipe: str) -> dict:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"experiment={recipe}"])
    return {key: cfg.trainer.get(key) for key in ("max_time", "max_steps", "max_epochs")}


def test_there_are_recipes():
    assert {"qt", "nli", "skipthought", "autoencoder", "nmt", "jbi", "jpa"} <= set(RECIPES)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES)
def test_a_shipped_recipe_stops_on_steps_or_epochs_never_on_the_clock(recipe):
    trainer = composed_trainer(recipe)
    assert trainer["max_time"] is None, f"conf/experiment/{recipe}.yaml sets trainer.max_time={trainer['max_time']}"
    steps, epochs = trainer["max_steps"], trainer["max_epochs"]
    assert (steps is not None and steps > 0) or (epochs is not None and epochs > 0), trainer


PAPER_SCALE = ("_logeswaran2018", "_conneau2018", "_kiros2015")


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_shipped_recipe_says_how_long_it_takes_and_what_it_departs_from(recipe):
    text = (ROOT / "conf" / "experiment" / f"{recipe}.yaml").read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert yaml.safe_load(text) is not None
    if recipe.endswith(PAPER_SCALE):
        assert re.search(r"paper scale|paper-scale", header, re.I), f"{recipe}.yaml: say what scale it is for"
    else:
        assert IDLE_TIME.search(header), f"{recipe}.yaml: say how long the recipe takes on two idle CPU cores"
    assert re.search(r"depart", header, re.I), f"{recipe}.yaml: say what the recipe departs from in its paper"
