"""What each command does first once its imports are done: ``freeze_imported_objects()``."""
from __future__ import annotations

import gc


def freeze_imported_objects() -> None:
    """Move every object alive now into the garbage collector's permanent generation (``gc.freeze``): the modules,
    classes and tables the imports made (torch, Lightning, SciPy and Hydra make millions), which live until the process
    ends anyway. Python otherwise walks all of them in each full collection and once more as the process exits: 1.4 s
    of a short ``train.py`` run's 6.4 on two cores (``benchmarks/cli_startup.py``). Objects made afterwards are
    collected as before; frozen ones are still freed when their last reference goes."""
    gc.freeze()
