"""A process's first call of a small cached numba kernel through ``probe_kernels.compiled_once``, started once the
file ``argv[1]`` exists (so that processes started apart call it together); prints ``compiled`` or ``loaded``.

    NUMBA_CACHE_DIR=<empty folder> python tests/helpers/kernel_first_call.py <go file>
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from sentence_lab.evaluation.classifier.probe_kernels import compiled_once


@njit(cache=True)
def add_one(x):
    for i in range(x.shape[0]):
        x[i] += 1.0


if __name__ == "__main__":
    go = Path(sys.argv[1])
    while not go.exists():
        time.sleep(0.01)
    values = np.zeros(4)
    compiled_once(add_one, values.dtype, values)
    assert values.tolist() == [1.0] * 4
    print("compiled" if sum(add_one.stats.cache_misses.values()) else "loaded")
