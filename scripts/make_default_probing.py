"""Build the default probing set shipped in ``assets/probing/books-en`` from the shipped books.

    python scripts/make_default_probing.py [--train 10000 --dev 1000 --test 1000]

Runs ``sentence_lab.probing_gen`` on ``assets/books`` (its train and valid books: public-domain text, so the set
is too) with the pinned spaCy pipeline (requirements-probing.txt), every sentence parsed, then xz-compresses
the task files (the probing loader reads ``.txt.xz``). The evaluation engine falls back to this set when
the data root has neither SentEval's nor X-Probe's probing files, so ``python train.py`` draws probing
curves on a fresh machine. The default QT model trains on these books: its probes see sentences it was
trained on (the paper kept its probing sentences out of SkipThought's training data).
"""
from __future__ import annotations

import argparse
import json
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from sentence_lab.probing_gen.__main__ import parse_settings
    from sentence_lab.probing_gen.generate import generate
    from sentence_lab.text.files import atomic_write_text

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "assets" / "probing" / "books-en"))
    parser.add_argument("--train", type=int, default=10000)
    parser.add_argument("--dev", type=int, default=1000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    # 1000 words (the paper) would leave ~2 sentences per word in 2M words of text: 200 words keep ~30 each
    parser.add_argument("--wc-words", type=int, default=200)
    args = parser.parse_args()
    out = Path(args.out)
    settings = parse_settings([f"corpus={ROOT / 'assets' / 'books'}", f"out={out}", f"train={args.train}",
                               f"dev={args.dev}", f"test={args.test}", "parse_sample=1000000",
                               f"wc_words={args.wc_words}", f"workers={args.workers}", "balance_by=document",
                               # 8 depth classes 5-12 (the paper's) de-correlated from length keep 1.3k of these 70k
                               # sentences: the 5 consecutive depths that keep the most (6-10: 9k)
                               "depth_classes=5", "depth_min=null"])
    meta = generate(settings)
    meta["source"]["corpus"] = "assets/books (the project's shipped public-domain books, train + valid)"
    meta["settings"]["corpus"], meta["settings"]["out"] = "assets/books", "assets/probing/books-en"
    for entry in meta["tasks"].values():
        path = out / entry["file"]
        (out / f"{entry['file']}.xz").write_bytes(lzma.compress(path.read_bytes(), preset=9 | lzma.PRESET_EXTREME))
        path.unlink()
        entry["file"] += ".xz"
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    print(f"{out}: {', '.join(meta['tasks'])}; skipped: {meta['skipped'] or 'none'}")


if __name__ == "__main__":
    main()
