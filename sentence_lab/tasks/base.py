"""What every task module shares: the loaded-data containers, the data errors and the file readers.

Sentences are kept as strings: SentEval splits every line on whitespace and hands token lists to
the batcher, which joins them back with single spaces; here the join is done once, at load time.
"""
from __future__ import annotations

import lzma
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

GET_DATA_HINT = (
    "get it with scripts/get_senteval_data.sh <data_dir> (needs internet), "
    "or point SENTENCE_DATA / paths.data_dir at a folder that holds it"
)


class TaskDataError(Exception):
    """A task's data cannot be used; the message is one line naming the cause and the fix."""


class MissingTaskData(TaskDataError):
    def __init__(self, task: str, path: Path | str, hint: str = GET_DATA_HINT) -> None:
        self.task, self.path = task, str(path)
        super().__init__(f"{task}: missing data, expected {path}: {hint}")


class MalformedData(TaskDataError):
    def __init__(self, path: Path | str, lineno: int, problem: str) -> None:
        self.path, self.lineno = str(path), lineno
        super().__init__(f"malformed data in {path}, line {lineno}: {problem}; fix or re-download the file")


@dataclass
class Split:
    """One split: sentences ``a`` (and ``b`` for pair tasks) with targets ``y`` (int labels or float scores)."""

    a: list[str]
    y: np.ndarray
    b: list[str] | None = None

    def __len__(self) -> int:
        return len(self.a)

    @property
    def second(self) -> list[str]:
        """The pairs' second sentences ``b``; a ``TaskDataError`` for a split of single sentences."""
        if self.b is None:
            raise TaskDataError("a pair regime was given a split of single sentences: its task is not a pair task")
        return self.b

    def sentences(self) -> list[str]:
        return self.a + (self.b or [])


@dataclass
class TaskData:
    """A loaded task: named splits, already in SentEval's sorted order.

    ``splits`` holds ``all`` (nested CV), ``train``/``test``, ``train``/``dev``/``test``, or one
    entry per STS sub-dataset. ``info`` is copied into the task's result (split notes, label maps).
    """

    splits: dict[str, Split]
    nclasses: int | None = None
    info: dict = field(default_factory=dict)

    def sentences(self) -> list[str]:
        out: list[str] = []
        for split in self.splits.values():
            out.extend(split.sentences())
        return out

    @property
    def n(self) -> int:
        return sum(len(s) for s in self.splits.values())

    @property
    def classes(self) -> int:
        """``nclasses`` of a classification task; a ``TaskDataError`` for a task loaded without it."""
        if self.nclasses is None:
            raise TaskDataError("a classification regime was given a task loaded without its number of classes: "
                                "its loader must set nclasses")
        return self.nclasses


def downstream_dir(data_dir: Path | str) -> Path:
    """The folder holding the transfer tasks (MR/, SICK/, STS/, ...) below a data root, in either layout:
    ours, ``<data>/senteval/`` (``SENTENCE_DATA``), or SentEval's own ``task_path``, ``<data>/downstream/``
    (what ``data/downstream/get_transfer_data.bash`` makes). Ours wins when both exist; when neither does,
    ours is named in the missing-data errors."""
    root = Path(data_dir)
    if not (root / "senteval").is_dir() and (root / "downstream").is_dir():
        return root / "downstream"
    return root / "senteval"


def require(task: str, *paths: Path) -> None:
    for path in paths:
        if not Path(path).is_file():
            raise MissingTaskData(task, path)


def split_files(task: str, data_dir: Path, folder: str, names: Mapping[str, str]) -> dict[str, Path]:
    """Each split's file (``names``: split -> file name) under ``downstream/<folder>`` of SentEval's layout, every
    one present (else ``MissingTaskData`` naming the first missing)."""
    root = downstream_dir(data_dir) / folder
    paths = {split: root / name for split, name in names.items()}
    require(task, *paths.values())
    return paths


def _decode(path: Path, encoding: str) -> str:
    """The whole file as text (xz-decompressed when it ends in ``.xz``); an undecodable byte is a
    ``MalformedData`` naming its line."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".xz"):
        try:
            raw = lzma.decompress(raw)
        except lzma.LZMAError as err:
            raise MalformedData(path, 0, f"not a valid xz file ({err})") from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        lineno = raw[: err.start].count(b"\n") + 1
        raise MalformedData(path, lineno, f"not valid {encoding} ({err.reason})") from None


def read_lines(path: Path, encoding: str = "utf-8") -> list[str]:
    """The file's lines as ``str.splitlines`` gives them (what SentEval's ``read().splitlines()`` does)."""
    return _decode(path, encoding).splitlines()


def iter_lines(path: Path, encoding: str = "utf-8"):
    """``(line number, line)`` as Python's file iteration gives them (``for line in f``), newline kept."""
    text = _decode(path, encoding)
    # io.open(..., newline=None) turns \r\n and \r into \n, then iterates on \n
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")  # only on newlines: str.splitlines would also split on \x0b, \x85, \u2028...
    if lines and lines[-1] == "":
        lines.pop()
    return enumerate(lines, start=1)


def join_tokens(text: str) -> str:
    """SentEval's ``text.split()``, joined back with single spaces."""
    return " ".join(text.split())


def ntokens(sentence: str) -> int:
    return len(sentence.split())


def sorted_single(sentences: Sequence[str], labels: Sequence) -> tuple[list[str], list]:
    """SentEval's sort before encoding and folds: by (number of tokens, label), stable."""
    order = sorted(range(len(sentences)), key=lambda i: (ntokens(sentences[i]), labels[i]))
    return [sentences[i] for i in order], [labels[i] for i in order]


def sorted_pairs(a: Sequence[str], b: Sequence[str], labels: Sequence) -> tuple[list[str], list[str], list]:
    """Pair tasks: by (tokens of A, tokens of B, label), stable."""
    order = sorted(range(len(a)), key=lambda i: (ntokens(a[i]), ntokens(b[i]), labels[i]))
    return [a[i] for i in order], [b[i] for i in order], [labels[i] for i in order]


def int_split(sentences: list[str], labels: list[int]) -> Split:
    s, y = sorted_single(sentences, labels)
    return Split(a=s, y=np.asarray(y, dtype=np.int64))


def pair_split(a: list[str], b: list[str], labels: list, dtype=np.int64) -> Split:
    a, b, y = sorted_pairs(a, b, labels)
    return Split(a=a, b=b, y=np.asarray(y, dtype=dtype))


Loader = Callable[[Path], TaskData]


class EmptySplit(TaskDataError):
    def __init__(self, task: str, split: str) -> None:
        super().__init__(f"{task}: the {split} split is empty (an empty or truncated file?): check or re-download the "
                         "task's files")


def check_splits(task: str, data: TaskData) -> TaskData:
    """Every split of a loaded task must hold examples, else one line naming the split."""
    for name, split in data.splits.items():
        if len(split) == 0:
            raise EmptySplit(task, name)
    return data
