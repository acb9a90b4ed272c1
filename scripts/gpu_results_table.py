"""Rewrite docs/results.md's "On a GPU" summary table from the newest record under docs/gpu/ (a device run's
``gpu_record.json``, committed as ``docs/gpu/<date>-<card>.json``).

    python scripts/gpu_results_table.py            # rewrite the table between the page's markers
    python scripts/gpu_results_table.py --check    # exit 1 when the page shows another table (what the test checks)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the records' code: benchmarks/lib/gpu_records.py
from lib import gpu_records  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the page is up to date")
    parser.add_argument("--records", type=Path, default=ROOT / "docs" / "gpu")
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "results.md")
    args = parser.parse_args(argv)
    path, record = gpu_records.newest(args.records)
    page = args.page.read_text()
    wanted = gpu_records.rewrite(page, gpu_records.table(record, path.relative_to(ROOT).as_posix()
                                                         if path.is_relative_to(ROOT) else path.name))
    if args.check:
        if wanted != page:
            print(f"{args.page} does not show {path.name}: run python scripts/gpu_results_table.py", file=sys.stderr)
            return 1
        return 0
    args.page.write_text(wanted)
    print(f"{args.page}: the table of {path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
