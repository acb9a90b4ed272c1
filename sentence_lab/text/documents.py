"""Plain-text documents: find them in a folder, read them (``.txt`` or ``.txt.xz``), split them into sentences."""
from __future__ import annotations

import lzma
import re
from pathlib import Path

from blingfire import text_to_sentences

DOCUMENT_SUFFIXES = (".txt", ".txt.xz")
_BLANK_LINES = re.compile(r"\n\s*\n")


def list_documents(folder: str | Path) -> list[Path]:
    """Every ``*.txt`` (or xz-compressed ``*.txt.xz``) below ``folder``, in sorted path order (the corpus order)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"corpus folder {root} does not exist: set paths.data_dir (env SENTENCE_DATA) or data.train_dir"
        )
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(DOCUMENT_SUFFIXES))
    if not files:
        raise FileNotFoundError(f"no .txt or .txt.xz documents under {root}: point data.train_dir at a folder of "
                                "plain-text books")
    return files


def split_sentences(text: str) -> list[str]:
    """Paragraphs are separated by blank lines; wrapped lines are joined; sentences by blingfire."""
    sentences: list[str] = []
    for paragraph in _BLANK_LINES.split(text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            sentences.extend(s for s in text_to_sentences(paragraph).split("\n") if s.strip())
    return sentences


MAX_NOT_TEXT = 0.01  # share of characters that are undecodable bytes or control codes above which a file is not text


def not_text_share(text: str) -> float:
    """Share of ``text``'s characters that are U+FFFD (bytes that were not UTF-8) or control codes other than
    whitespace: about 0 for any text, about half or more for binary data."""
    if not text:
        return 0.0
    bad = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t\f\v"))
    return bad / len(text)


def read_document(path: Path) -> str:
    """A plain-text document, decompressed when it ends in ``.xz``; a file that is not UTF-8 text, or not a
    readable .xz file, is refused in one line naming it."""
    if path.name.endswith(".xz"):
        try:
            raw = lzma.decompress(path.read_bytes())
        except lzma.LZMAError as err:
            raise ValueError(f"{path}: not a readable .xz file ({err}): re-compress it with xz or remove it from the "
                             "corpus folder") from None
    else:
        raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    share = not_text_share(text)
    if share > MAX_NOT_TEXT:
        raise ValueError(f"{path}: not text ({share:.0%} of its characters are undecodable bytes or control codes): "
                         "convert it to UTF-8 text or remove it from the corpus folder")
    return text
