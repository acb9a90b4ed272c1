"""Build the default training corpus shipped in ``assets/books`` from the public-domain Gutenberg corpus.

    python scripts/make_default_corpus.py --source ../shared/data/corpora/gutenberg --words 1600000

Books come from that corpus's *train* split only (its valid and test books stay unseen), one book per
author in turn (authors in name order, each author's books by size, smallest first) until the
training text reaches ``--words``; the next ``--valid-books`` books picked the same way form the
validation split. Each book is written xz-compressed (``<Author>__<Title>.txt.xz``); the corpus
reader decompresses ``.txt.xz`` on the fly. A ``MANIFEST.tsv`` lists the books and their word counts.
"""
from __future__ import annotations

import argparse
import lzma
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_manifest(path: Path) -> list[dict]:
    """Rows of the corpus's ``manifest.tsv``; a few original titles (``repo_path``) hold line breaks, so a
    record is joined across lines until it has every field."""
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].rstrip("\r").split("\t")
    rows, pending = [], ""
    for line in lines[1:]:
        pending += line
        if pending.count("\t") >= len(header) - 1:
            rows.append(dict(zip(header, pending.rstrip("\r").split("\t"))))
            pending = ""
    return rows


def pick_books(manifest: Path, min_words: int, max_words: int) -> list[dict]:
    """Train-split books, interleaved across authors, as the order in which to take them."""
    by_author: dict[str, list[dict]] = defaultdict(list)
    for row in read_manifest(manifest):
        if row["split"] == "train" and min_words <= int(row["clean_words"]) <= max_words:
            by_author[row["author"]].append(row)
    queues = [sorted(books, key=lambda r: (int(r["clean_words"]), r["file"])) for _, books in sorted(by_author.items())]
    order = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="corpora/gutenberg (with manifest.tsv)")
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "books")
    parser.add_argument("--words", type=int, default=1_600_000, help="training words to ship")
    parser.add_argument("--valid-books", type=int, default=2)
    parser.add_argument("--min-book-words", type=int, default=20_000)
    parser.add_argument("--max-book-words", type=int, default=120_000)
    args = parser.parse_args()
    order = pick_books(args.source / "manifest.tsv", args.min_book_words, args.max_book_words)
    train: list[dict] = []
    valid: list[dict] = []
    words = 0
    for row in order:
        if words < args.words:
            train.append(row)
            words += int(row["clean_words"])
        elif len(valid) < args.valid_books:
            valid.append(row)
    for split, rows in (("train", train), ("valid", valid)):
        folder = args.out / split
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.txt*"):
            old.unlink()
        for row in rows:
            text = (args.source / "train" / row["file"]).read_bytes()
            name = row["file"].replace("/", "__") + ".xz"
            (folder / name).write_bytes(lzma.compress(text, preset=9))
    with open(args.out / "MANIFEST.tsv", "w", encoding="utf-8") as f:
        f.write("split\tauthor\tfile\twords\n")
        for split, rows in (("train", train), ("valid", valid)):
            for row in rows:
                f.write(f"{split}\t{row['author']}\t{row['file']}\t{row['clean_words']}\n")
    print(f"train: {len(train)} books, {words} words; valid: {len(valid)} books, "
          f"{sum(int(r['clean_words']) for r in valid)} words -> {args.out}")


if __name__ == "__main__":
    main()
