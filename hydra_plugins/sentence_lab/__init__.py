"""sentence-lab's Hydra plugins. Hydra loads a plugin class only from the ``hydra_plugins`` namespace package that
every plugin shares; the logic lives in ``sentence_lab.runs.sweeps``."""
