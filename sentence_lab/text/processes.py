"""Work spread over worker processes that start wherever a job runs: a plain run, a DDP rank, a joblib (loky) or
SLURM job. The workers are spawned (no fork of a process holding threads or a CUDA context); a worker that cannot
start, or dies, ends the work with one error naming the cause, instead of a pool that replaces it forever."""
from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

J = TypeVar("J")
R = TypeVar("R")


class WorkersFailed(RuntimeError):
    """A worker process could not start or died (the out-of-memory killer, a crash at import)."""


@contextlib.contextmanager
def _spawnable_start_method() -> Iterator[None]:
    """A spawned child sets the parent's default start method first thing. Inside a joblib (loky) worker that
    method is ``loky``, which the child's ``multiprocessing`` does not know, so every child died at start-up. For the
    time the workers start, the default is a standard method; it is put back afterwards."""
    current = multiprocessing.get_start_method(allow_none=True)
    if current is None or current in multiprocessing.get_all_start_methods():
        yield
        return
    multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(current, force=True)


def ordered_map(function: Callable[[J], R], jobs: Iterable[J], workers: int) -> Iterator[R]:
    """``function(job)`` for each job, in the jobs' order, yielded as they are ready: in ``workers`` spawned
    processes when ``workers > 1`` (``function`` must be importable by name), else here. Raises
    ``WorkersFailed`` when a worker cannot start or dies."""
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    with _spawnable_start_method():  # map submits every job, which starts every worker before it returns
        executor = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"))
        try:
            results = executor.map(function, jobs, chunksize=1)
        except BaseException:
            executor.shutdown(cancel_futures=True)
            raise
    try:
        yield from results
    except BrokenProcessPool as err:
        raise _failed(err, workers) from None
    finally:
        executor.shutdown(cancel_futures=True)


def _failed(err: BaseException, workers: int) -> WorkersFailed:
    return WorkersFailed(f"a worker process of {workers} died or could not start ({err}): set the workers to 0 to "
                         "work in this process (data.preprocess_workers=0), or see the worker's error above")
