"""Inside a SLURM job, Lightning reads its ranks from SLURM's environment (``SLURMEnvironment``) but does not requeue
the job itself: the launcher's mechanism (submitit's requeue on SIGUSR2, ``hydra_plugins/sentence_lab/slurm_launcher``)
is the one, so one signal means one thing and a requeued job is counted once."""
from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from lightning.pytorch.plugins.environments import ClusterEnvironment, SLURMEnvironment
from omegaconf import DictConfig


def trainer_plugins(trainer_cfg: DictConfig) -> dict[str, Any]:
    """Keyword arguments for instantiating ``trainer_cfg``: under SLURM its ``plugins`` and a ``SLURMEnvironment``
    with Lightning's auto-requeue off (unless the config names a cluster environment itself); elsewhere none."""
    if not SLURMEnvironment.detect():
        return {}
    plugins = [instantiate(p) for p in trainer_cfg.get("plugins") or []]
    if any(isinstance(p, ClusterEnvironment) for p in plugins):
        return {}
    return {"plugins": [*plugins, SLURMEnvironment(auto_requeue=False)]}
