"""Every command the docs show stays true: each ``python train.py ...`` and ``python evaluate.py ...`` line of the
README and ``docs/*.md`` is composed with Hydra's compose API (a misspelt group, option or key fails here), and every
``python <script>.py`` / ``python -m <module>`` they name exists."""
from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[1]
# The recipe pages' commands name the config the reader writes by following them: their own tests compose them
# against conf/ with that config added (tests/encoders/test_adding_an_encoder.py, tests/objectives/...).
RECIPES = ("adding-an-encoder.md", "adding-an-objective.md")
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in RECIPES)]
ENTRY = {"train.py": "train", "evaluate.py": "evaluate"}


def code_lines(page: Path) -> list[str]:
    """The lines of the page's fenced code blocks, comments and shell prompts removed."""
    out, inside = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            continue
        if inside:
            out.append(re.sub(r"\s+#\s.*$", "", line).strip())
    return out


def commands(entry: str) -> list[tuple[str, str]]:
    """(page, command line) for every ``python <entry> ...`` in a code block."""
    found = []
    for page in PAGES:
        for line in code_lines(page):
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith(f"python {entry}"):
                    found.append((page.name, part))
    return found


def first_of_each_sweep(overrides: list[str]) -> list[str]:
    """A multirun's ``key=a,b,c`` composed as its first job, ``key=a``."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    out = []
    for raw, override in zip(overrides, parsed):
        if override.is_sweep_override():
            out.append(f"{override.get_key_element()}={next(override.sweep_string_iterator())}")
        else:
            out.append(raw)
    return out


CASES = [(entry, page, line) for entry in ENTRY for page, line in commands(entry)]


def test_the_docs_show_commands():
    assert len([c for c in CASES if c[0] == "train.py"]) >= 15
    assert len([c for c in CASES if c[0] == "evaluate.py"]) >= 10


@pytest.mark.parametrize("entry,page,line", CASES, ids=[f"{p}:{line[:70]}" for _, p, line in CASES])
def test_doc_command_composes(entry, page, line):
    line = re.sub(r"<[^<>]*>", "placeholder", line)  # <run>, <time>: the reader's own values
    args = [a for a in shlex.split(line)[2:] if a not in ("-m", "--multirun")]
    overrides = first_of_each_sweep(args)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name=ENTRY[entry], overrides=overrides, return_hydra_config=True)
    assert cfg.task_name


def test_named_scripts_and_modules_exist():
    missing = []
    for page in PAGES:
        for line in code_lines(page):
            for script in re.findall(r"python3? ((?:[\w.-]+/)*[\w.-]+\.py)\b", line):
                if not (ROOT / script).is_file():
                    missing.append(f"{page.name}: {script}")
            for module in re.findall(r"python3? -m ([\w.]+)", line):
                if module not in ("venv", "pytest", "pip") and importlib.util.find_spec(module) is None:
                    missing.append(f"{page.name}: -m {module}")
    assert not missing, missing


# The project's own folders: a path in prose under one of them names a file of this repository (SentEval's
# `examples/bow.py` or S2V's `training/homogeneous_data.py` are other projects' and are not checked).
OWN_FOLDERS = ("sentence_lab/", "benchmarks/", "scripts/", "tests/", "conf/", ".ci/", "docs/", "senteval/")
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def paragraphs(page: Path) -> list[str]:
    """The page's prose split at blank lines (code blocks included: a path there is checked the same way)."""
    return [block for block in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")) if block.strip()]


def held_by(commit: str, path: str) -> bool:
    """Whether ``commit`` of this checkout holds ``path`` (a one-off script cited where it lived)."""
    done = processes.run(["git", "cat-file", "-e", f"{commit}:{path}"], cwd=ROOT, capture_output=True)
    return done.returncode == 0


def test_every_script_the_prose_names_exists_or_is_cited_by_the_commit_that_held_it():
    """A script the docs name is in the tree, or its paragraph cites a commit holding it (the one-off scripts that
    measured a figure once and left ``benchmarks/``)."""
    in_git = (ROOT / ".git").exists()
    missing = []
    for page in PAGES + [ROOT / "docs" / name for name in RECIPES]:
        for block in paragraphs(page):
            for path in re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|sh))(?:\s[^`]*)?`", block):
                if not path.startswith(OWN_FOLDERS) or (ROOT / path).exists():
                    continue
                commits = COMMIT.findall(block)
                if not commits or (in_git and not any(held_by(c, path) for c in commits)):
                    missing.append(f"{page.name}: {path}")
    assert not missing, sorted(set(missing))


def _expand_braces(name: str) -> list[str]:
    """``multi30k_en_{fr,de}`` -> ``multi30k_en_fr``, ``multi30k_en_de``."""
    match = re.search(r"\{([^{}]*)\}", name)
    if match is None:
        return [name]
    return [n for part in match.group(1).split(",")
            for n in _expand_braces(name[: match.start()] + part + name[match.end():])]


def config_tables() -> dict[str, set[str]]:
    """Per config group, the options a docs table of config groups (``| group | options |``) names: every
    backticked identifier in the row's options cell (``key.path``, ``a=b`` and flags are not option names)."""
    tables: dict[str, set[str]] = {}
    for page in PAGES:
        inside = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if re.match(r"\|\s*group\s*\|\s*options\s*\|", line):
                inside = True
                continue
            if inside and not line.startswith("|"):
                inside = False
            if inside and not line.startswith("|---"):
                group_cell, options_cell = line.strip("|").split("|", 1)
                group = group_cell.strip().strip("`")
                names = {n for token in re.findall(r"`([^`]+)`", options_cell) for n in _expand_braces(token)}
                tables[group] = {n for n in names if re.fullmatch(r"[a-z][a-z0-9_]*", n)}
    return tables


def test_the_config_groups_table_names_every_option_in_conf_and_nothing_else():
    tables = config_tables()
    assert {"encoder", "objective", "data", "trainer", "logger", "callbacks", "experiment"} <= set(tables)
    for group, named in tables.items():
        present = {p.stem for p in (ROOT / "conf" / group).glob("*.yaml")}
        assert present, f"docs name a config group {group!r} that conf/ does not have"
        assert not named - present, f"{group}: the docs name options conf/{group}/ does not have: {named - present}"
        assert not present - named, f"{group}: the docs' table leaves out conf/{group}/ options {present - named}"
    groups = {p.name for p in (ROOT / "conf").iterdir() if p.is_dir()} - {"hydra"}
    assert not groups - set(tables), f"config groups missing from the docs' table: {groups - set(tables)}"
