"""Turn a directory of runs into a table and figures: ``python report.py logs/train/multiruns/<time>``."""
import sys

from sentence_lab.cli.project_root import set_project_root

set_project_root()

from sentence_lab.cli.imported_objects import freeze_imported_objects  # noqa: E402
from sentence_lab.reporting.report import main as report_main  # noqa: E402


def main() -> int:
    freeze_imported_objects()
    return report_main()


if __name__ == "__main__":
    sys.exit(main())
