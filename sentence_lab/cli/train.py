"""Train a sentence encoder: ``python train.py encoder=bilstm_max objective=qt``."""
import sys

from sentence_lab.cli.project_root import set_project_root
from sentence_lab.home import CONF

set_project_root()

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from sentence_lab.cli.imported_objects import freeze_imported_objects  # noqa: E402
from sentence_lab.runs.renamed_keys import renamed_overrides  # noqa: E402
from sentence_lab.runs.run import train  # noqa: E402
from sentence_lab.runs.run_dir import claim_run_dir, register_resolvers  # noqa: E402
from sentence_lab.runs.sweeps import run_job  # noqa: E402

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="train")
def train_job(cfg: DictConfig) -> float | None | list[float | None]:
    return run_job(cfg, train)


def main() -> None:
    """The command line, renamed keys rewritten (``sentence_lab.runs.renamed_keys``) and an explicit run directory
    checked, and shared by the ranks under torchrun (``sentence_lab.runs.run_dir.claim_run_dir``), then Hydra."""
    freeze_imported_objects()
    try:
        sys.argv[1:] = claim_run_dir(renamed_overrides(sys.argv[1:]))
    except (ValueError, FileNotFoundError) as err:  # before Hydra has written anything: one line, exit 1
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(1)
    train_job()


if __name__ == "__main__":
    main()
