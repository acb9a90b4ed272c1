"""text.processes.ordered_map: order kept, workers that start inside a joblib (loky) worker, a dead worker an error."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sentence_lab.text.processes import WorkersFailed, ordered_map
from tests.helpers import processes
from tests.helpers.worker_jobs import die, square

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_results_come_in_the_jobs_order_whatever_the_workers(workers):
    assert list(ordered_map(square, range(7), workers)) == [x * x for x in range(7)]


def test_a_worker_that_dies_is_one_error_not_a_pool_that_replaces_it_forever():
    with pytest.raises(WorkersFailed, match="data.preprocess_workers=0"):
        list(ordered_map(die, range(4), workers=2))


@pytest.mark.slow
def test_workers_start_inside_a_joblib_loky_worker():
    """A loky worker's default start method is 'loky', which a spawned child cannot set: with multiprocessing.Pool
    every child died at start-up and was replaced forever (the joblib sweep that never ended)."""
    script = ("import joblib\nfrom tests.helpers.worker_jobs import squares_in_workers\n"
              "print(joblib.Parallel(n_jobs=2, backend='loky')(joblib.delayed(squares_in_workers)(n) for n in (3, 4)))")
    env = dict(os.environ, PYTHONPATH=str(TESTS.parent))
    done = processes.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[[0, 1, 4], [0, 1, 4, 9]]"
