"""Shared fixtures: the project root on the path and a tiny ordered corpus made here."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

# Threads that wait for work sleep instead of spinning (read by OpenMP when torch loads, so before its import; the
# workers inherit it): a test that trains on two threads beside the other worker's test ran 2-6 times as long spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch

from lib.smoke_inputs import WORDS  # the made-up corpora's words, one list
from sentence_lab.runs.run_dir import register_resolvers
from tests.helpers.hash_encoder import HashEncoder
from tests.helpers.senteval_tree import make_senteval_tree

# SENTENCE_LAB_SKIPPED_TESTS=<file>: the skipped tests' ids go there (.ci/run runs them again with the extras and data)
pytest_plugins = ["tests.helpers.skipped_tests", "tests.helpers.processes", "tests.helpers.longest_first"]

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
register_resolvers()  # the configs' ${unique_dir:...}, as train.py and evaluate.py register it



def write_corpus(folder: Path, n_docs: int, sentences_per_doc: int, seed: int) -> Path:
    """Documents of random short sentences, wrapped into paragraphs like the Gutenberg books."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        paragraphs = []
        for _ in range(0, sentences_per_doc, 4):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).capitalize() + "."
                         for _ in range(4)]
            text = " ".join(sentences)
            paragraphs.append("\n".join(text[i : i + 60] for i in range(0, len(text), 60)))
        (folder / f"doc{d:02d}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    write_corpus(root / "train", n_docs=3, sentences_per_doc=40, seed=0)
    write_corpus(root / "valid", n_docs=1, sentences_per_doc=24, seed=1)
    return root



def _sentence(rng: random.Random, lo: int = 3, hi: int = 9) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))).capitalize() + "."


@pytest.fixture(scope="session")
def tiny_pairs(tmp_path_factory) -> dict[str, Path]:
    """Small pair files in the layouts the data configs read: NLI (TSV with header, InferSent's
    s1/s2/labels), a parallel TSV (side b a made-up language) and a paraphrase TSV."""
    root = tmp_path_factory.mktemp("pairs")
    rng = random.Random(5)
    labels = ("entailment", "neutral", "contradiction")
    rows = ["premise\thypothesis\tlabel\tsource"]
    rows += [f"{_sentence(rng)}\t{_sentence(rng)}\t{labels[i % 3]}\tfixture" for i in range(60)]
    rows.append(f"{_sentence(rng)}\t{_sentence(rng)}\t-\tfixture")  # no gold label: dropped
    (root / "nli.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    snli = root / "snli"
    snli.mkdir()
    for split, n in (("dev", 20), ("test", 18)):
        pairs = [(_sentence(rng), _sentence(rng), labels[i % 3]) for i in range(n)]
        for name, column in (("s1", 0), ("s2", 1), ("labels", 2)):
            (snli / f"{name}.{split}").write_text("\n".join(p[column] for p in pairs) + "\n", encoding="utf-8")
    parallel = []
    for _ in range(80):
        english = _sentence(rng)
        foreign = " ".join(w[::-1] + "o" for w in english.rstrip(".").lower().split()) + " ."
        parallel.append(f"{english}\t{foreign}")
    (root / "parallel.tsv").write_text("\n".join(parallel) + "\n", encoding="utf-8")
    para = [f"{_sentence(rng, 1, 3)}\t{_sentence(rng, 1, 3)}" for _ in range(80)]
    (root / "paraphrases.tsv").write_text("\n".join(para) + "\n", encoding="utf-8")
    return {"nli": root / "nli.tsv", "snli": snli, "parallel": root / "parallel.tsv",
            "paraphrases": root / "paraphrases.tsv"}


@pytest.fixture
def senteval_root(tmp_path) -> Path:
    """A made-up data root in SentEval's layout (``helpers/senteval_tree.py``)."""
    return make_senteval_tree(tmp_path / "data")


@pytest.fixture
def hash_encoder() -> HashEncoder:
    return HashEncoder()


SECOND_PART = "SENTENCE_LAB_SECOND_PART"  # .ci/run's second part sets it: the tests marked second_part run there


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``second_part`` (a transformer trained, a stop drilled end to end) skip unless
    ``SENTENCE_LAB_SECOND_PART=1``: the README's command stays within its minutes, CI's second part runs them."""
    if os.environ.get(SECOND_PART) == "1":
        return
    skip = pytest.mark.skip(reason=f"CI's second part (set {SECOND_PART}=1 to run it here)")
    for item in items:
        if item.get_closest_marker("second_part"):
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist the cores are shared among the workers: each worker's torch (and the commands it starts,
    through ``OMP_NUM_THREADS``) gets its share, at least one thread. Two workers of two threads each on two cores
    spent 30-45% longer on the same training tests (docs/development.md)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers:
        threads = max(1, (os.cpu_count() or 1) // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
