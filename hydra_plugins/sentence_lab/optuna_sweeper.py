"""``hydra/sweeper=optuna`` (conf/hydra/sweeper/optuna.yaml): Optuna sweeps whose trials are pruned on the per-epoch
scores, whose study resumes and can be shared (``sentence_lab.runs.optuna_sweep``)."""
from __future__ import annotations

from sentence_lab.runs.optuna_sweep import PruningOptunaSweeper


class OptunaSweeper(PruningOptunaSweeper):
    """Hydra loads plugins from the ``hydra_plugins`` namespace only: this is ``PruningOptunaSweeper`` there."""
