"""Turn a directory of runs into a table and figures: ``python report.py logs/train/multiruns/<time>``."""
import os
import sys
from pathlib import Path

os.environ.setdefault("PROJECT_ROOT", str(Path(__file__).resolve().parents[1]))

from sentence_lab.tools.report import main as report_main  # noqa: E402


def main() -> int:
    return report_main()


if __name__ == "__main__":
    sys.exit(main())
