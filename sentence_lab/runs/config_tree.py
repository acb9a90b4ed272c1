"""The composed config as a tree: printed at the start of a run and saved beside its outputs."""
from __future__ import annotations

import os
from pathlib import Path

import rich.syntax
import rich.tree
from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from sentence_lab.text.files import atomic_write_text

FIRST = ("data", "encoder", "objective", "model", "trainer", "callbacks", "logger", "paths")


def config_tree(cfg: DictConfig, save_to: Path | None = None, show: bool = True) -> str:
    """Render ``cfg`` (resolved) as a rich tree, most-read groups first; print it and/or save it as text."""
    tree = rich.tree.Tree("CONFIG", guide_style="dim")
    order = [k for k in FIRST if k in cfg] + [k for k in cfg if k not in FIRST]
    for key in order:
        branch = tree.add(str(key))
        node = cfg[key]
        text = OmegaConf.to_yaml(node, resolve=True) if isinstance(node, DictConfig) else str(node)
        branch.add(rich.syntax.Syntax(text, "yaml"))
    if show:
        Console().print(tree)
    with open(os.devnull, "w") as sink:
        recorder = Console(record=True, width=120, file=sink)
        recorder.print(tree)
    rendered = recorder.export_text()
    if save_to is not None:
        atomic_write_text(save_to, rendered)
    return rendered
