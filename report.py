"""Turn a directory of runs into a table and figures: ``python report.py logs/train/multiruns/<time>``
(``sentence_lab/cli/report.py``)."""
import sys

from sentence_lab.cli.report import main

if __name__ == "__main__":
    sys.exit(main())
