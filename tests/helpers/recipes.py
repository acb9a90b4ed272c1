"""Follow a docs/ recipe page: its code blocks by language, and its commands composed against conf/ with the page's
own config file added (as a reader who followed the page would have it)."""
from __future__ import annotations

import re
import shlex
import shutil
import sys
import types
from pathlib import Path

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

ROOT = Path(__file__).resolve().parents[2]


def blocks(page: str, language: str) -> list[str]:
    """The page's fenced code blocks of one language, in order."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def load_as(module_name: str, source: str) -> types.ModuleType:
    """Run a block of the page as the module its config's ``_target_`` names (e.g. ``encoders.mean_max``)."""
    module = types.ModuleType(module_name)
    exec(compile(source, f"<{module_name}>", "exec"), module.__dict__)  # noqa: S102 - the page's own code
    sys.modules[module_name] = module
    return module


def follow(page: str) -> tuple[types.ModuleType, str]:
    """The page's one Python block run as the module its one YAML block's ``_target_`` names, and that YAML."""
    (source,) = blocks(page, "python")
    (config,) = blocks(page, "yaml")
    target = yaml.safe_load(config)["_target_"]
    return load_as(target.rsplit(".", 1)[0], source), config


def conf_with(tmp: Path, group: str, name: str, yaml_text: str) -> Path:
    """A copy of conf/ with the page's config file written as ``<group>/<name>.yaml``."""
    conf = tmp / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / group / f"{name}.yaml").write_text(yaml_text, encoding="utf-8")
    return conf


def compose_commands(page: str, conf: Path) -> list[DictConfig]:
    """Every ``python train.py|evaluate.py ...`` line of the page's bash blocks, composed against ``conf``."""
    out = []
    for block in blocks(page, "bash"):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            for entry, config in (("train.py", "train"), ("evaluate.py", "evaluate")):
                if line.startswith(f"python {entry}"):
                    GlobalHydra.instance().clear()
                    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
                        out.append(compose(config_name=config, overrides=shlex.split(line)[2:]))
    return out
