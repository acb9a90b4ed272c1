"""Fitting the members of a stage (:func:`fit_members`): where the features live, the epochs (recorded as a CUDA graph
where they can be), early stopping, and what was kept (:class:`FitResult`)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sentence_lab.evaluation.classifier import probe_kernels, step_graphs
from sentence_lab.evaluation.classifier.batch_plan import BatchPlan, EpochSteps, Group, Step
from sentence_lab.evaluation.classifier.early_stopping import EarlyStopping
from sentence_lab.evaluation.classifier.masked_optimizer import MaskedOptimizer
from sentence_lab.evaluation.classifier.stacked_probe import EVAL_BUDGET, StackedProbe
from sentence_lab.evaluation.protocol import ProtocolParams, resolve_device

log = logging.getLogger(__name__)


def features_stay_on_host(nbytes: int, device: torch.device, budget_gb: float) -> bool:
    """Whether a task's feature matrix (``nbytes``) stays in host memory while probes train on ``device``: on
    an accelerator when it is larger than ``budget_gb`` (``ProtocolParams.device_features_gb``), and always at
    a budget of 0 (which runs that path on the CPU too, for its tests)."""
    return budget_gb <= 0 or (device.type != "cpu" and nbytes > budget_gb * 2**30)


def count_correct(Z: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """Dev score of classifiers: rows right ``[G, L]`` from logits ``[G, L, C, N]``, labels and mask ``[G, N]``."""
    right = (Z.argmax(2) == labels.unsqueeze(1)) & mask.unsqueeze(1)
    return right.sum(-1).cpu().numpy()


@dataclass
class FitResult:
    """Kept (best-dev) weights of the ``[G, L]`` members, in the engine's layout ``[G, L, out, in + 1]``."""

    weights: list[torch.Tensor]
    best_score: np.ndarray  # [G, L] dev score of the kept weights (classifiers: dev rows right)
    ndev: np.ndarray  # [G]
    nepoch: np.ndarray  # [G, L] epochs trained when the member stopped
    nclasses: int
    work: dict | None = None  # what the training read and computed (benchmarks/eval_speed.py --high-dim)

    def dev_accuracy(self) -> np.ndarray:
        """SentEval's ``clf.score(devX, devy)`` (a fraction) per member, ``[G, L]``."""
        return self.best_score / np.maximum(self.ndev, 1)[:, None]

    @torch.no_grad()
    def logits(self, X, g: int = 0, reg: int = 0) -> torch.Tensor:
        """Logits ``[n, C]`` of member ``(g, reg)`` (group, L2 value) for the rows of ``X``."""
        W = [w[g : g + 1, reg : reg + 1] for w in self.weights]
        X = np.asarray(X)  # moved to the device a chunk at a time: the whole matrix never is
        step, probe = max(1, EVAL_BUDGET // max(1, X.shape[1])), StackedProbe(W)
        out = [probe.logits(torch.as_tensor(X[i : i + step]).to(device=W[0].device, dtype=W[0].dtype)
                            .unsqueeze(0))[0][0, 0].T for i in range(0, len(X), step)]
        return torch.cat(out) if out else torch.zeros(0, self.nclasses)

    def predict(self, X, g: int = 0, reg: int = 0) -> np.ndarray:
        """Class ids (int64) predicted by member ``(g, reg)``."""
        return self.logits(X, g, reg).argmax(-1).cpu().numpy().astype(np.int64)

    def score(self, X, y, g: int = 0, reg: int = 0) -> float:
        """SentEval's ``clf.score``: the fraction of rows predicted right."""
        return 1.0 * int((self.predict(X, g, reg) == np.asarray(y)).sum()) / len(y)


@torch.inference_mode()  # no autograd anywhere: gradients are written by hand (a quarter less overhead per step)
def fit_members(X, y, groups: Sequence[Group], l2, params: ProtocolParams, nclasses: int, *, Xdev=None, ydev=None,
                loss: str = "cross_entropy", dev_score: Callable | None = None, dtype: torch.dtype = torch.float32,
                device: str | None = None, hidden: Sequence[tuple[int, float]] | None = None) -> FitResult:
    """Train the ``[G, L]`` grid of SentEval probes; ``l2`` is ``[L]`` (every group) or ``[G, L]``.

    ``hidden``: one ``(nhid, dropout)`` per member ``[L]`` (MLPs, ``nhid > 0``), for a grid over probe shapes
    trained together (the probing paper's protocol); ``None``: every member is ``params.nhid`` and
    ``params.dropout``.

    ``y``: class ids (cross-entropy), or target distributions ``[n, C]`` (``loss="softmax_mse"``).
    ``dev_score(Z, dev_idx, dev_mask) -> [g, L]`` scores logits ``[g, L, C, Nd]`` of padded dev rows
    (default: :func:`count_correct` against ``ydev``, or ``y`` when there is no ``Xdev``).
    """
    l2 = np.broadcast_to(np.asarray(l2, dtype=np.float64), (len(groups), np.shape(l2)[-1])).copy()
    G, L = l2.shape
    if hidden is not None and len({n for n, _ in hidden}) > 1:
        def fit_width(l2_part: np.ndarray, hidden_part: list[tuple[int, float]]) -> FitResult:
            return fit_members(X, y, groups, l2_part, params, nclasses, Xdev=Xdev, ydev=ydev, loss=loss,
                               dev_score=dev_score, dtype=dtype, device=device, hidden=hidden_part)
        return _fit_each_width(l2, list(hidden), nclasses, fit_width)
    dev = torch.device(resolve_device(device or params.device))
    as_t = lambda a: torch.as_tensor(np.asarray(a), device=dev)  # noqa: E731
    features = np.asarray(X).size + (0 if Xdev is None else np.asarray(Xdev).size)
    staged = features_stay_on_host(features * dtype.itemsize, dev, params.device_features_gb)
    Xt = torch.as_tensor(np.asarray(X), device="cpu" if staged else dev).to(dtype).contiguous()
    y_t = as_t(y)
    if loss == "cross_entropy":
        T = torch.nn.functional.one_hot(y_t.long(), nclasses).to(dtype)
    else:
        T = y_t.to(dtype).contiguous()
    yd = y_t if Xdev is None else as_t(ydev)
    dev_score = dev_score or (lambda Z, idx, mask: count_correct(Z, yd[idx], mask))

    plan = BatchPlan(groups, params.seed, int(params.batch_size), dev, dtype,
                     scale=1.0 if loss == "cross_entropy" else 2.0 / nclasses)
    width = max(1, max(plan.ndev))
    dev_idx = torch.zeros(G, width, dtype=torch.long, device=dev)
    dev_mask = torch.zeros(G, width, dtype=torch.bool, device=dev)
    for g, rows in enumerate(plan.dev):
        dev_idx[g, : len(rows)], dev_mask[g, : len(rows)] = as_t(rows), True
    if hidden is not None:
        if len(hidden) != L or min(n for n, _ in hidden) < 1:
            raise ValueError(f"hidden: one (nhid >= 1, dropout) per member, {L} of them; got {list(hidden)}")
        model = StackedProbe.init_members(Xt.shape[1], nclasses, hidden, G, params.seed, dtype, dev)
    else:
        model = StackedProbe.init(Xt.shape[1], nclasses, int(params.nhid), (G, L), params.seed,
                                  float(params.dropout), dtype, dev)
    model.fused = model.fused and params.fused_kernels
    model.staged = staged and not model.fused  # the fused kernels run on the CPU, where the features are
    if not model.fused:  # the torch path's products read the bias's column of ones with the rows: [X | 1]
        Xt = torch.cat([Xt, Xt.new_ones(len(Xt), 1)], 1)
    # dev rows are only multiplied: no ones column
    Xd = Xt if Xdev is None else torch.as_tensor(np.asarray(Xdev), device=Xt.device).to(dtype).contiguous()
    opt = MaskedOptimizer(params.optim, l2, model.params)
    stop = EarlyStopping((G, L), int(params.tenacity))
    best = [p.clone() for p in model.params]
    # what was read and computed, and how the epochs ran
    work: dict[str, Any] = {"steps": 0, "rows": 0, "dev_rows": 0, "member_rows": 0, "dev_member_rows": 0,
                            "graph_epochs": 0}
    recorder = step_graphs.recorder_for(dev) if params.cuda_graphs else None
    recorded = (_RecordedEpochs(recorder, model, opt, Xt, T, loss)
                if recorder is not None and not (model.fused or model.staged or model.drops) else None)
    live, members, nepoch, selections = np.arange(G), np.arange(L), 0, 0
    while stop.alive.any() and nepoch <= params.max_epoch:
        for epoch in range(nepoch, nepoch + params.epoch_size):
            steps = plan.epoch(epoch, live)
            replayed = False
            if (recorded is not None and recorded.failure is None and steps.active.all()
                    and opt.recordable(model.params[0])):
                replayed = recorded.run(steps, key=(selections,))
                if not replayed:
                    log.warning("a probe's epoch could not be recorded as a CUDA graph (%s): the fit steps one by "
                                "one from here, and so does every later fit of this process if the recording had "
                                "begun (set evaluation.cuda_graphs=false to step from the start)", recorded.failure)
                    work["graph_failure"] = recorded.failure
            if replayed:
                work["graph_epochs"] += 1
            else:
                for step, grads in model.epoch_gradients(Xt, T, steps, loss):
                    opt.step(model.params, grads, step.active)
            work["steps"] += len(steps.rows)
            work["rows"] += steps.rows.numel()
            work["member_rows"] += steps.rows.numel() * len(members)
        nepoch += params.epoch_size
        live_t, members_t = torch.as_tensor(live, device=dev), torch.as_tensor(members, device=dev)
        idx, mask = dev_idx[live_t], dev_mask[live_t]
        scores = np.zeros((len(live), L))  # members that left the model are stopped in every live group
        scores[:, members] = np.concatenate([dev_score(Z, idx[part], mask[part])
                                             for part, Z in model.logits_at(Xd, idx, plan.ndev[live])])
        work["dev_rows"] += idx.numel()
        work["dev_member_rows"] += idx.numel() * len(members)
        improved = torch.as_tensor(stop.update(live, scores, nepoch)[:, members], device=dev)
        at = (live_t[:, None], members_t)
        for kept, p in zip(best, model.params):
            kept[at] = torch.where(improved.view(*improved.shape, 1, 1), p, kept[at])
        alive = stop.alive[live][:, members]  # a group leaves when all its members stopped, a member when it
        keep, keep_members = alive.any(1), alive.any(0)  # stopped in every group: no step computes it again
        if keep.any() and not (keep.all() and keep_members.all()):
            kept_t = (torch.as_tensor(keep, device=dev), torch.as_tensor(keep_members, device=dev))
            model.select(*kept_t)
            opt.select(*kept_t)
            live, members, selections = live[keep], members[keep_members], selections + 1
    width = max(n for n, _ in hidden) if hidden is not None else int(params.nhid)
    columns = (probe_kernels.training_columns(L, nclasses, loss == "softmax_mse") if model.fused
               else L * (width or nclasses))
    work["graph_recordings"] = 0 if recorded is None else recorded.graph.recordings
    work.update(batch_size=plan.batch_size, d=model.params[0].shape[-1] - 1, members=L, nclasses=nclasses,
                nhid=width, optim=opt.method, fused=model.fused, train_columns=columns, staged=model.staged)
    return FitResult(best, stop.best, plan.ndev, stop.nepoch, nclasses, work)


class _RecordedEpochs:
    """:func:`fit_members`' epochs through a :class:`.step_graphs.EpochGraph`, for epochs
    whose groups all step at every step: each step's gradients and update, with Adam's step count in a device
    tensor that the recording advances (set from the host's count before every epoch)."""

    def __init__(self, record: step_graphs.Recorder, model: StackedProbe, opt: MaskedOptimizer, X: torch.Tensor,
                 T: torch.Tensor, loss: str):
        self.graph = step_graphs.EpochGraph(record)
        self.model, self.opt, self.X, self.T, self.loss = model, opt, X, T, loss
        self.count = torch.zeros((), dtype=torch.float32, device=model.params[0].device)
        self.rows_per_group = np.zeros((0, 0), dtype=np.int64)
        self.failure: str | None = None

    def _step(self, s: int, rows: torch.Tensor, weight: torch.Tensor) -> None:
        self.count.add_(1)
        step = Step(rows, self.rows_per_group[s], weight, None)
        self.opt.step(self.model.params, self.model.step_gradients(self.X, self.T, step, self.loss),
                      step_count=self.count)

    def _warm_up(self) -> None:  # the gradients are written in place; the optimiser steps on copies
        step = Step(self.graph.rows[0], self.rows_per_group[0], self.graph.weight[0], None)
        self.opt.warm_up(self.model.params, self.model.step_gradients(self.X, self.T, step, self.loss),
                         self.count + 1)

    def run(self, steps: EpochSteps, key: tuple) -> bool:
        """One epoch; ``key`` changes whenever the model's or optimiser's tensors do (a selection). False, with
        nothing changed, when its recording failed: the epoch is the caller's to step."""
        start = self.opt.steps
        self.count.fill_(float(start[0]))
        self.rows_per_group = steps.counts
        try:
            self.graph.run(steps.rows, steps.weight, key, self._step, self._warm_up)
        except step_graphs.RecordingFailed as err:
            self.opt._set_steps(start)
            self.failure = str(err)
            if err.begun:
                step_graphs.refuse_recordings(self.failure)
            return False
        self.opt._set_steps(start + len(steps.rows))  # a recording counts steps on the host; a replay does not
        return True


COUNTED = ("steps", "rows", "dev_rows", "member_rows", "dev_member_rows", "train_columns", "graph_epochs",
           "graph_recordings")


def _fit_each_width(l2: np.ndarray, hidden: list[tuple[int, float]], nclasses: int,
                    fit_width: Callable[[np.ndarray, list[tuple[int, float]]], FitResult]) -> FitResult:
    """Members of one hidden width train as one stack, each width apart, so no member computes a wider member's
    units (the grid [50, 100, 200] padded to 200 computes 7,200 units a step for 4,200 real ones). Members are
    independent, so this trains each as the one stack would (dropout masks aside: drawn per stack); the results
    are merged in the members' order, weights zero-padded to the widest (padded units add nothing)."""
    G, L = l2.shape
    parts = []
    for width in sorted({n for n, _ in hidden}):
        members = [m for m, (n, _) in enumerate(hidden) if n == width]
        parts.append((members, fit_width(l2[:, members], [hidden[m] for m in members])))
    widest = parts[-1][1].weights
    W1 = widest[0].new_zeros(G, L, *widest[0].shape[2:])
    W2 = widest[1].new_zeros(G, L, *widest[1].shape[2:])
    best, nepoch = np.zeros((G, L)), np.zeros((G, L), dtype=np.int64)
    work = dict(parts[0][1].work or {})
    for key in COUNTED:
        work[key] = sum((res.work or {}).get(key, 0) for _, res in parts)
    work.update(members=L, nhid=W1.shape[2])
    for members, res in parts:
        h = res.weights[0].shape[2]
        W1[:, members, :h] = res.weights[0]
        W2[:, members, :, :h] = res.weights[1][..., :h]
        W2[:, members, :, -1] = res.weights[1][..., -1]
        best[:, members], nepoch[:, members] = res.best_score, res.nepoch
    return FitResult([W1, W2], best, parts[0][1].ndev, nepoch, nclasses, work)
