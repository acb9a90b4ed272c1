"""An epoch of probe training steps recorded once and replayed: on a GPU, one CUDA graph launch an epoch.

The classifier engine's steps are small (SICK-R's regression: a ``[64, 2d] x [2d, 5]`` product, its softmax and
Adam's update, some 20 kernels); on a GPU each costs a few microseconds of arithmetic and tens of microseconds of
Python and kernel launches, so the relatedness tasks' 20,000-70,000 steps dominated the per-epoch suite there
(docs/results.md, "On a GPU"). A CUDA graph records an epoch's kernels once, reading each step's rows and loss
weights from buffers that stay in place, and replays them with one launch; the kernels, and so the results, are the
ones the steps would run one by one.

What a recording may not hold, :func:`sentence_lab.evaluation.classifier.fit_members` keeps out: a value computed on
the host from the step count (Adam takes the count from a device tensor through torch's fused kernel instead), a
group that does not step (its epoch ended early), dropout's generator, and rows staged in host memory.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import torch

__all__ = ["Recorder", "RecordingFailed", "EpochGraph", "cuda_graph_recorder", "call_recorder", "recorder_for",
           "refuse_recordings"]

# record(warm_up, steps) -> replay: ``steps`` recorded (not run), after ``warm_up`` ran once.
Recorder = Callable[[Callable[[], None], Callable[[], None]], Callable[[], None]]

_SIDE_STREAMS: dict[int, torch.cuda.Stream] = {}  # one recording stream per GPU: one cuBLAS workspace, one cache
_refused: str | None = None  # why this process records no more (a recording failed after it began)


class RecordingFailed(RuntimeError):
    """A recording could not be made; nothing of it ran, so the steps can still run one by one. ``begun``: it failed
    after the recording began (torch before 2.12 then leaves its allocator believing a capture is under way)."""

    def __init__(self, message: str, begun: bool = False):
        super().__init__(message)
        self.begun = begun


def cuda_graph_recorder(warm_up: Callable[[], None], steps: Callable[[], None],
                        device: torch.device | None = None) -> Callable[[], None]:
    """Record ``steps`` as one CUDA graph of ``device`` (default: the current GPU) and return its replay.

    ``warm_up`` runs first on the current stream (the buffers ``steps`` allocates lazily belong to it), then on the
    recording stream (libraries' per-stream set-up, such as cuBLAS's workspace, must not happen inside a recording).
    ``torch.cuda.graph``'s context would also synchronise the device and empty the allocator's cache at every
    recording, and a fit records again after every change of its members, so the recording is begun and ended here.
    ``thread_local``: another thread's CUDA work (a data loader's pinning thread) does not void it."""
    with torch.cuda.device(device):
        index = torch.cuda.current_device()
        if index not in _SIDE_STREAMS:
            _SIDE_STREAMS[index] = torch.cuda.Stream(device=index)
        side = _SIDE_STREAMS[index]
        warm_up()
        side.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side):
            warm_up()
            side.synchronize()
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                steps()
            except BaseException as err:
                with contextlib.suppress(RuntimeError):  # the recording is void; its end says so, not why
                    graph.capture_end()
                raise RecordingFailed(f"{type(err).__name__}: {err}", begun=True) from err
            graph.capture_end()
        torch.cuda.current_stream().wait_stream(side)

    def replay() -> None:
        with torch.cuda.device(index):
            graph.replay()

    return replay


def call_recorder(warm_up: Callable[[], None], steps: Callable[[], None]) -> Callable[[], None]:
    """A recorder without CUDA: the replay calls ``steps`` again. It keeps a recording's contract (nothing runs when
    recording; every replay reads the buffers as they are then), so the bookkeeping around a recording can be tested
    on any device."""
    warm_up()
    return steps


def recorder_for(device: torch.device) -> Recorder | None:
    """The recorder for probes on ``device``: CUDA graphs on a GPU; none elsewhere (the CPU's steps run one by one),
    nor after :func:`refuse_recordings`."""
    if device.type != "cuda" or _refused is not None:
        return None
    return functools.partial(cuda_graph_recorder, device=device)


def refuse_recordings(reason: str) -> None:
    """No more recordings in this process (after one failed once it had begun: the allocator may not trust another)."""
    global _refused
    _refused = reason


class EpochGraph:
    """An epoch's steps over buffers that stay in place (rows ``[S, G, B]``, loss weights ``[S, G, 1, 1, B]``),
    recorded by ``record`` and replayed every epoch while ``key`` and the shapes hold; otherwise recorded again."""

    def __init__(self, record: Recorder):
        self.record = record
        self.key: tuple | None = None
        self.replay: Callable[[], None] | None = None
        self.rows = self.weight = torch.empty(0)
        self.recordings = self.replays = 0

    def run(self, rows: torch.Tensor, weight: torch.Tensor, key: tuple,
            step: Callable[[int, torch.Tensor, torch.Tensor], None], warm_up: Callable[[], None]) -> None:
        """Run the epoch whose steps take ``rows[s]`` and ``weight[s]``: ``step(s, rows_s, weight_s)`` makes step
        ``s`` (it must read nothing but these buffers and tensors that stay in place); ``warm_up`` runs before a
        recording. ``key`` names everything else the steps read and write (a new parameter tensor: a new key).
        Raises :class:`RecordingFailed` when the recording fails; the epoch did not run then."""
        if self.replay is None or key != self.key or rows.shape != self.rows.shape:
            self.replay = None  # the previous graph and its memory go first
            self.rows, self.weight, self.key = rows.clone(), weight.clone(), key

            def steps() -> None:
                for s in range(len(self.rows)):
                    step(s, self.rows[s], self.weight[s])

            try:
                self.replay = self.record(warm_up, steps)
            except RecordingFailed:
                raise
            except RuntimeError as err:
                raise RecordingFailed(f"{type(err).__name__}: {err}") from err
            self.recordings += 1
        else:
            self.rows.copy_(rows)
            self.weight.copy_(weight)
        self.replay()
        self.replays += 1
