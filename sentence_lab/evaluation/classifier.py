"""The classifier engine of the SentEval protocol: every probe of a task stage trained as one stacked model.

SentEval (``senteval/tools/classifier.py``, ``relatedness.py``) trains its probes one after another. The
probes of a stage (each fold x each L2 value) are independent and start from the same seed, so here they
train together. Members sit on a grid ``[G, L]``: a *group* is a training set with its dev set, shared by
``L`` members that differ only in their L2 value. Four pieces, each written once:

* :class:`BatchPlan` -- SentEval's numpy streams: the 5% validation split, then one permutation per epoch,
  one ``RandomState(seed)`` per (training-set size, split), since SentEval reseeds numpy in every
  classifier. Per step it gives the rows of every live group, each row's loss weight (``1 / rows`` of the
  group's minibatch; padding weighs 0) and which groups step (a group whose epoch is over does not).
* :class:`StackedProbe` -- one tensor per layer for all members, ``[G, L, out, in + 1]``: ``nn.Linear``'s
  ``[out, in]`` with the bias as the last column. Gradients are written by hand for SentEval's two losses:
  cross-entropy (classifiers) and MSE on the softmax (relatedness); no autograd runs.
* :class:`MaskedOptimizer` -- torch's single-tensor update of adam, adamax, rmsprop, sgd, adagrad and
  adadelta (``torch/optim/*.py``) with a per-member weight decay and per-group step counts.
* :class:`EarlyStopping` -- SentEval's rule, per member.

Members never mix: every row of the products, every softmax and every optimiser element is one member's. MLP
members of different hidden widths (the probing paper's grid) train as one stack per width. A member that stopped
keeps its best weights (a copy); a group leaves the model when all its members stopped, and a member when it
stopped in every group (until then it steps with its group, unused). Results equal SentEval's one-by-one training
up to float rounding (summation order inside the products): ``tests/helpers/senteval_transcription.py`` is the
reference. Dropout > 0 draws its masks from its own
generator, so with dropout the two agree in distribution only.

Speed: on the CPU a linear probe without dropout steps through :mod:`sentence_lab.evaluation.probe_kernels` (one
compiled pass per step reads each row once, straight from the feature matrix); otherwise (MLP, dropout, wide outputs,
a GPU) the features get a column of ones once per fit, the rows and weighted targets of an epoch's steps are
gathered at once (``GATHER_BUDGET``), and a step dispatches only torch's products ``W @ Xb^T`` and ``dZ @ Xb``, the
softmax, the loss's gradient and the update: 10 kernels a step for a linear probe under RMSprop, 6 under Adam
(torch's fused kernel, when all groups share a step count), 9 for the relatedness regression
(``benchmarks/lib/dispatch_counts.py``, ``benchmarks/suite_dispatch.py``). On a GPU an epoch whose groups
all step at every step is recorded once as a CUDA graph and replayed (:mod:`sentence_lab.evaluation.step_graphs`).
What the engine reads and computes is counted in ``FitResult.work`` (``benchmarks/eval_speed.py --high-dim``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from sentence_lab.evaluation import probe_kernels, step_graphs
from sentence_lab.evaluation.protocol import ProtocolParams, parse_optim, resolve_device

__all__ = ["Group", "FitResult", "BatchPlan", "StackedProbe", "MaskedOptimizer", "EarlyStopping", "fit_members",
           "count_correct"]

log = logging.getLogger(__name__)

EVAL_BUDGET = 1 << 24  # floats materialised at once when scoring dev or test rows
GATHER_BUDGET = 1 << 24  # floats of training rows gathered at once, for as many steps of an epoch as they hold


def features_stay_on_host(nbytes: int, device: torch.device, budget_gb: float) -> bool:
    """Whether a task's feature matrix (``nbytes``) stays in host memory while probes train on ``device``: on
    an accelerator when it is larger than ``budget_gb`` (``ProtocolParams.device_features_gb``), and always at
    a budget of 0 (which runs that path on the CPU too, for its tests)."""
    return budget_gb <= 0 or (device.type != "cpu" and nbytes > budget_gb * 2**30)


@dataclass
class Group:
    """A training set and its dev set, shared by ``L`` members (one per L2 value).

    ``train_idx`` indexes rows of ``X``; ``dev_idx`` rows of ``Xdev`` (of ``X`` when there is no ``Xdev``);
    ``None`` is SentEval's ``validation_split``: a random ``int(split * n)`` of the training rows is held out.
    """

    train_idx: np.ndarray
    dev_idx: np.ndarray | None = None
    validation_split: float = 0.05


@dataclass
class _Stream:
    """SentEval's numpy draws for one (training-set size, split): the held-out split, then a permutation per epoch."""

    rs: np.random.RandomState
    kept: np.ndarray | None = None  # positions trained on, after a validation split
    held: np.ndarray | None = None  # positions held out for early stopping
    epoch: int = -1
    perm: np.ndarray | None = None


class Step(NamedTuple):
    """One minibatch step of the live groups: ``rows [Ga, B]`` (the first ``count[g]`` are group ``g``'s, then
    padding), each row's loss weight ``[Ga, 1, 1, B]`` (``scale / count``, 0 on padding) and which groups step
    (bool ``[Ga]``, or None when all do: a group whose epoch is over does not)."""

    rows: torch.Tensor
    count: np.ndarray
    weight: torch.Tensor
    active: np.ndarray | None


class EpochSteps(NamedTuple):
    """An epoch's steps at once: rows ``[S, Ga, B]``, rows per group ``[S, Ga]``, loss weights
    ``[S, Ga, 1, 1, B]`` and which groups step ``[S, Ga]`` (bool)."""

    rows: torch.Tensor
    counts: np.ndarray
    weight: torch.Tensor
    active: np.ndarray

    def each(self) -> Iterator[Step]:
        """The steps one by one (``active`` None where every group steps)."""
        full = np.all(self.active, axis=1)
        for s in range(len(self.rows)):
            yield Step(self.rows[s], self.counts[s], self.weight[s], None if full[s] else self.active[s])


class BatchPlan:
    """Training and dev rows of each group, and per step the rows, loss weights and stepping groups."""

    def __init__(self, groups: Sequence[Group], seed: int, batch_size: int, device: torch.device,
                 dtype: torch.dtype = torch.float32, scale: float = 1.0):
        self.batch_size, self.device, self.dtype, self.scale = batch_size, device, dtype, scale
        streams: dict[tuple, _Stream] = {}
        self.train, self.dev, self.stream = [], [], []
        for group in groups:
            rows = np.asarray(group.train_idx, dtype=np.int64)
            split = None if group.dev_idx is not None else float(group.validation_split)
            if (len(rows), split) not in streams:
                st = streams[len(rows), split] = _Stream(np.random.RandomState(seed))
                if split is not None:
                    perm, cut = st.rs.permutation(len(rows)), int(split * len(rows))
                    st.kept, st.held = perm[cut:], perm[:cut]
            st = streams[len(rows), split]
            self.train.append(rows if split is None else rows[st.kept])
            self.dev.append(np.asarray(group.dev_idx, dtype=np.int64) if split is None else rows[st.held])
            self.stream.append(st)
        self.ndev = np.array([len(d) for d in self.dev], dtype=np.int64)

    def _perm(self, g: int, epoch: int) -> np.ndarray:
        st = self.stream[g]  # groups sharing a stream are in lockstep: epochs come in increasing order
        while st.epoch < epoch:
            st.perm, st.epoch = st.rs.permutation(len(self.train[g])), st.epoch + 1
        return st.perm

    def steps(self, epoch: int, live: np.ndarray) -> Iterator[Step]:
        """The minibatch steps of ``epoch`` for the groups ``live``, in SentEval's order."""
        return self.epoch(epoch, live).each()

    def epoch(self, epoch: int, live: np.ndarray) -> EpochSteps:
        """All steps of ``epoch`` for the groups ``live`` at once (what :meth:`steps` yields one by one)."""
        B = self.batch_size
        rows = [self.train[g][self._perm(g, epoch)] for g in live]
        S = -(-max(len(r) for r in rows) // B)
        idx = np.zeros((len(live), S * B), dtype=np.int64)
        count = np.zeros((len(live), S), dtype=np.int64)
        for i, r in enumerate(rows):
            idx[i, : len(r)] = r
            count[i] = np.clip(len(r) - B * np.arange(S), 0, B)
        weight = (np.arange(B)[None, None, :] < count[:, :, None]) * (self.scale / np.maximum(count, 1)[:, :, None])
        idx_t = torch.as_tensor(idx.reshape(len(live), S, B).transpose(1, 0, 2).copy(), device=self.device)
        weight_t = torch.as_tensor(weight.transpose(1, 0, 2)[:, :, None, None].copy(), device=self.device,
                                   dtype=self.dtype)
        count = np.ascontiguousarray(count.T)
        return EpochSteps(idx_t, count, weight_t, count > 0)


def _affine(W: torch.Tensor, Xb: torch.Tensor) -> torch.Tensor:
    """``[G, M, B]`` from weights ``[G, M, k + 1]`` and inputs ``[G, B, k + 1]`` (augmented) or ``[G, B, k]``."""
    if Xb.shape[-1] == W.shape[-1]:
        return torch.bmm(W, Xb.transpose(1, 2))
    return torch.baddbmm(W[..., -1:], W[..., :-1], Xb.transpose(1, 2))


class StackedProbe:
    """SentEval's probe (``Linear``, or ``Linear -> Dropout -> Sigmoid -> Linear``) for all members at once.

    Members may differ in dropout (the probing paper's grid, :func:`fit_members`'s ``hidden``, one stack per
    hidden width): ``dropout`` is then one rate per member, ``[L]``.
    """

    def __init__(self, params: list[torch.Tensor], dropout: float | torch.Tensor = 0.0, seed: int = 0):
        self.params = params
        self.set_dropout(dropout if isinstance(dropout, torch.Tensor) else float(dropout))
        self._A: torch.Tensor | None = None  # the training step's hidden activations, kept across steps
        self.grads = [torch.empty_like(p) for p in params]  # written in place every step (no per-step allocation)
        self.gen = torch.Generator(device=params[0].device)
        self.gen.manual_seed(seed)
        W = params[0]
        rate = float(self.dropout.max()) if isinstance(self.dropout, torch.Tensor) else self.dropout
        self.fused = len(params) == 1 and probe_kernels.usable(W.device, 0, rate, W.shape[1] * W.shape[2],
                                                               W.shape[3], W.element_size())
        self._rows = self._targets = None  # the torch path's gather buffers
        # Features kept in host memory (fit_members, ``device_features_gb``): rows are gathered there, into a
        # buffer pinned when CUDA is present, and copied to the probe's device a step at a time.
        self.staged = False
        self._host: torch.Tensor | None = None

    def _gather(self, X: torch.Tensor, index: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Rows ``index`` of ``X`` into ``out`` (on the probe's device)."""
        if not self.staged:
            return torch.index_select(X, 0, index, out=out)
        if self._host is None or self._host.numel() < out.numel():
            self._host = torch.empty(out.numel(), dtype=X.dtype, pin_memory=torch.cuda.is_available())
        host = self._host[: out.numel()].view(out.shape)
        torch.index_select(X, 0, index.cpu(), out=host)
        return out.copy_(host, non_blocking=False)

    @classmethod
    def init(cls, d: int, nclasses: int, nhid: int, shape: tuple[int, int], seed: int, dropout: float,
             dtype: torch.dtype, device: torch.device) -> StackedProbe:
        """Every member starts from SentEval's weights right after ``torch.manual_seed(seed)``."""
        sizes = [d, nclasses] if nhid == 0 else [d, nhid, nclasses]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            layers = [torch.nn.Linear(i, o) for i, o in zip(sizes, sizes[1:])]
        params = [torch.cat([lin.weight, lin.bias[:, None]], 1).detach().to(device=device, dtype=dtype)
                  .expand(*shape, -1, -1).contiguous() for lin in layers]
        return cls(params, dropout, seed)

    @classmethod
    def init_members(cls, d: int, nclasses: int, hidden: Sequence[tuple[int, float]], groups: int, seed: int,
                     dtype: torch.dtype, device: torch.device) -> StackedProbe:
        """Members ``hidden[l] = (nhid, dropout)`` of one hidden width ``nhid > 0``, each starting from SentEval's
        weights right after ``torch.manual_seed(seed)``, with its own dropout rate."""
        widths = {n for n, _ in hidden}
        if len(widths) != 1:
            raise ValueError(f"one stack holds one hidden width, got {sorted(widths)}: fit_members splits by width")
        probe = cls.init(d, nclasses, widths.pop(), (groups, len(hidden)), seed, 0.0, dtype, device)
        probe.set_dropout(torch.tensor([float(p) for _, p in hidden], dtype=dtype, device=device))
        return probe

    def select(self, keep: torch.Tensor, members: torch.Tensor) -> None:
        self.params = [p[keep][:, members] for p in self.params]
        self.grads = [torch.empty_like(p) for p in self.params]
        if isinstance(self.dropout, torch.Tensor):
            self.set_dropout(self.dropout[members])

    def set_dropout(self, dropout: float | torch.Tensor) -> None:
        """The rate, or one per member; whether any member drops is kept on the host (a training step reads it,
        and a step recorded as a CUDA graph may not ask the device)."""
        self.dropout = dropout
        self.drops = bool((dropout > 0).any()) if isinstance(dropout, torch.Tensor) else dropout > 0

    def _keep_scale(self, Z: torch.Tensor) -> torch.Tensor:
        """Dropout's mask scaled by ``1 / (1 - rate)``, drawn from the probe's own generator; per member when the
        rates differ (a member with rate 0 keeps every unit)."""
        if isinstance(self.dropout, torch.Tensor):
            rate = self.dropout.view(1, -1, 1, 1).to(Z.dtype)
            return torch.empty_like(Z).bernoulli_((1 - rate).expand_as(Z), generator=self.gen).div_(1 - rate)
        return torch.empty_like(Z).bernoulli_(1 - self.dropout, generator=self.gen).div_(1 - self.dropout)

    def _columns(self, p: torch.Tensor) -> torch.Tensor:
        return p.view(p.shape[0], -1, p.shape[-1])

    def step_gradients(self, X: torch.Tensor, T: torch.Tensor, step: Step, loss: str) -> list[torch.Tensor]:
        """:meth:`gradients` on the step's rows of ``X [n, d + 1]`` and targets ``T [n, C]``: by the fused
        kernel (each row read once), or gathered into buffers kept across steps."""
        if self.fused:
            weight = np.ascontiguousarray(step.weight.numpy()[:, 0, 0, 0])  # a group's rows weigh the same
            probe_kernels.linear_gradients(X.numpy(), T.numpy(), step.rows.numpy(), step.count, weight,
                                           self._columns(self.params[0]).numpy(),
                                           self._columns(self.grads[0]).numpy(), loss == "softmax_mse")
            return self.grads
        G, B = step.rows.shape
        if self._rows is None or len(self._rows) < G * B:
            self._rows = torch.empty(G * B, X.shape[1], dtype=X.dtype, device=T.device)
            self._targets = T.new_empty(G * B, T.shape[1])
        Xb = self._gather(X, step.rows.view(-1), self._rows[: G * B]).view(G, B, -1)
        Tb = torch.index_select(T, 0, step.rows.view(-1), out=self._targets[: G * B])
        return self.gradients(Xb, _weighted_targets(Tb.view(1, G, B, -1), step.weight[None])[0], step.weight, loss)

    def epoch_gradients(self, X: torch.Tensor, T: torch.Tensor, steps: EpochSteps,
                        loss: str) -> Iterator[tuple[Step, list[torch.Tensor]]]:
        """Each step of an epoch with its gradients (the caller updates the weights between two): on the torch path
        the rows and targets of as many steps as ``GATHER_BUDGET`` floats hold are gathered, and the targets weighted,
        in one pass each, so that a step dispatches its products, the loss's gradient and nothing else; the values are
        :meth:`step_gradients`'. Gradients are computed when asked for, so after the previous step's update."""
        if self.fused or self.staged:
            for step in steps.each():
                yield step, self.step_gradients(X, T, step, loss)
            return
        S, G, B = steps.rows.shape
        chunk = max(1, GATHER_BUDGET // (G * B * X.shape[1]))
        each = steps.each()
        for start in range(0, S, chunk):
            rows = steps.rows[start : start + chunk]
            c = len(rows)
            Xc = torch.index_select(X, 0, rows.reshape(-1)).view(c, G, B, -1)
            Tc = _weighted_targets(torch.index_select(T, 0, rows.reshape(-1)).view(c, G, B, -1),
                                   steps.weight[start : start + c])
            for i in range(c):
                step = next(each)
                yield step, self.gradients(Xc[i], Tc[i], step.weight, loss)

    def logits_at(self, X: torch.Tensor, idx: torch.Tensor, count: np.ndarray,
                  budget: int = EVAL_BUDGET) -> Iterator[tuple[slice, torch.Tensor]]:
        """Logits ``[g, L, C, N]`` of each group's rows ``X[idx[g, :count[g]]]``, ``idx [G, N]``, by chunks of
        groups (``slice`` into the groups, logits): one chunk by the fused kernel, else gathered ``budget`` floats
        at a time."""
        G, L = self.params[0].shape[:2]
        N = idx.shape[1]
        if self.fused:
            Z = probe_kernels.linear_logits(X.numpy(), idx.numpy(), count, self._columns(self.params[0]).numpy())
            yield slice(0, G), torch.from_numpy(Z).view(G, L, -1, N)
            return
        chunk = max(1, budget // (N * X.shape[1]))
        buf = torch.empty(min(chunk, G) * N, X.shape[1], dtype=X.dtype, device=idx.device)
        for i in range(0, G, chunk):
            part = idx[i : i + chunk]
            Xb = self._gather(X, part.reshape(-1), buf[: part.numel()]).view(len(part), N, -1)
            yield slice(i, i + len(part)), self.logits(Xb, [p[i : i + chunk] for p in self.params])[0]

    def logits(self, Xb: torch.Tensor, params: list[torch.Tensor] | None = None, train: bool = False):
        """Logits ``[G, L, C, B]`` of inputs ``[G, B, d(+1)]``, and what the backward pass needs."""
        W = self.params if params is None else params
        G, L = W[0].shape[:2]
        B = Xb.shape[1]
        Z = _affine(W[0].view(G, -1, W[0].shape[-1]), Xb).view(G, L, -1, B)
        if len(W) == 1:
            return Z, None
        keep = None
        if train and self.drops:
            keep = self._keep_scale(Z)
            Z.mul_(keep)
        shape = (G, L, Z.shape[2] + 1, B)
        if not train:
            A = torch.ones(shape, dtype=Z.dtype, device=Z.device)
        else:  # a training step reuses the last one's buffer: its row of ones (the bias's input) is never written
            if self._A is None or self._A.shape != shape:
                self._A = torch.ones(shape, dtype=Z.dtype, device=Z.device)
            A = self._A
        torch.sigmoid(Z, out=A[:, :, :-1])
        W2 = W[1].view(G * L, W[1].shape[2], -1)
        return torch.bmm(W2, A.view(G * L, -1, B)).view(G, L, -1, B), (A, keep)

    def gradients(self, Xb: torch.Tensor, NTw: torch.Tensor, weight: torch.Tensor, loss: str) -> list[torch.Tensor]:
        """Gradients of the sum over members of each member's mean loss on its minibatch.

        ``Xb [G, B, d + 1]``; ``NTw [G, 1, C, B]``: the targets (one-hot, or relatedness's class distribution) times
        minus ``weight [G, 1, 1, B]`` (``1 / rows``, 0 on padding; ``2 / (C rows)`` for the MSE), so that the
        weighted residual ``(P - T) w`` is one pass, ``P w - T w``.
        """
        G, L = self.params[0].shape[:2]
        B = Xb.shape[1]
        Z, hidden = self.logits(Xb, train=True)
        P = torch.softmax(Z, 2)
        if loss == "cross_entropy":
            dZ = torch.addcmul(NTw, P, weight, out=P)
        else:  # "softmax_mse": mean over rows and classes of (P - T)^2 (the weights carry its 2 / C), via the softmax
            D = torch.addcmul(NTw, P, weight, out=torch.empty_like(P))  # P's layout, whatever the targets' strides
            dZ = D.sub_((P * D).sum(2, keepdim=True)).mul_(P)
        k = Xb.shape[-1]
        if hidden is None:
            torch.bmm(dZ.view(G, -1, B), Xb, out=self.grads[0].view(G, -1, k))
            return self.grads
        A, keep = hidden
        GL, h = G * L, A.shape[2] - 1
        dZ3 = dZ.view(GL, -1, B)
        torch.bmm(dZ3, A.view(GL, h + 1, B).transpose(1, 2), out=self.grads[1].view(GL, -1, h + 1))
        a = A[:, :, :h]
        dA = torch.bmm(self.params[1].view(GL, -1, h + 1)[..., :h].transpose(1, 2), dZ3).view(G, L, h, B)
        dZ1 = torch.ops.aten.sigmoid_backward(dA, a)  # dA a (1 - a), one pass
        if keep is not None:
            dZ1.mul_(keep)
        torch.bmm(dZ1.view(G, L * h, B), Xb, out=self.grads[0].view(G, L * h, k))
        return self.grads


def _weighted_targets(T: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Targets of steps' rows ``[S, G, B, C]`` times minus their loss weights ``[S, G, 1, 1, B]``, in the layout
    :meth:`StackedProbe.gradients` reads, ``[S, G, 1, C, B]``."""
    return torch.mul(T.permute(0, 1, 3, 2).unsqueeze(2), weight).neg_()


def _per_group(values: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Values per group ``[G]`` (or per member ``[G, L]``) shaped to broadcast against ``p [G, L, ...]``."""
    values = values.to(device=p.device, dtype=p.dtype if values.is_floating_point() else values.dtype)
    return values.view(*values.shape, *[1] * (p.dim() - values.dim()))


class MaskedOptimizer:
    """torch's single-tensor update rules on ``[G, L, ...]`` parameters, with weight decay ``l2 [G, L]`` per member
    and a step count per group. A group that does not step keeps its parameters, state and step count. Adam
    calls torch's fused kernel (``Adam(fused=True)``'s, the same rule in one pass; CPU and CUDA) when all groups
    share a step count; the weight decay is added to the gradient first, as the single-tensor rule does."""

    FUSED_ADAM_DEVICES = ("cpu", "cuda")

    STATE = {"adam": ("exp_avg", "exp_avg_sq"), "adamax": ("exp_avg", "exp_inf"), "rmsprop": ("square_avg",),
             "sgd": ("momentum_buffer",), "adagrad": ("sum",), "adadelta": ("square_avg", "acc_delta")}

    def __init__(self, spec: str, l2: np.ndarray, params: list[torch.Tensor]):
        self.method, self.hp = parse_optim(spec)
        hp, method = self.hp, self.method
        names = list(self.STATE[method])
        if method == "rmsprop":
            names = names + ["momentum_buffer"] * (hp["momentum"] > 0) + ["grad_avg"] * bool(hp["centered"])
        fill = hp.get("initial_accumulator_value", 0.0)
        self.state = [{k: torch.full_like(p, fill if k == "sum" else 0.0) for k in names} for p in params]
        self.tmp = [torch.empty_like(p) for p in params]  # each update's denominator, in place
        self.wd = torch.as_tensor(l2, dtype=params[0].dtype, device=params[0].device)
        self.decay = bool(np.any(l2))  # relatedness has none
        self._counts: torch.Tensor | None = None  # step counts 1, 2, ... for the fused Adam (_count_tensor)
        self._set_steps(np.zeros(len(l2), dtype=np.int64))

    def _set_steps(self, steps: np.ndarray) -> None:
        self.steps = steps
        self.same_step = bool((steps == steps[0]).all())  # then the factors are Python floats, as in torch

    def select(self, keep: torch.Tensor, members: torch.Tensor) -> None:
        self.wd = self.wd[keep][:, members]
        self._set_steps(self.steps[keep.cpu().numpy()])
        self.state = [{k: v[keep][:, members] for k, v in st.items()} for st in self.state]
        self.tmp = [t[keep][:, members] for t in self.tmp]

    def _count_tensor(self, k: int, device: torch.device) -> torch.Tensor:
        """Step count ``k`` as a float32 scalar on ``device`` for the fused kernel, which only reads it: a view into a
        table of counts made once (and again at twice the length when outgrown), not a new tensor a step."""
        if self._counts is None or len(self._counts) < k or self._counts.device != device:
            self._counts = torch.arange(1, max(2 * k, 1024) + 1, dtype=torch.float32, device=device)
        return self._counts[k - 1]

    def _factor(self, fn: Callable[[int], float], p: torch.Tensor):
        """``fn(step)`` as torch computes it (a Python float), per group as ``[G, 1, ...]`` when counts differ."""
        if self.same_step:
            return fn(int(self.steps[0]))
        return _per_group(torch.tensor([fn(int(k)) for k in self.steps], dtype=torch.float64), p)

    def _fused_adam(self, p: torch.Tensor) -> bool:
        return self.method == "adam" and self.same_step and p.device.type in self.FUSED_ADAM_DEVICES

    def recordable(self, p: torch.Tensor) -> bool:
        """Whether a step can be recorded once and replayed (:mod:`~sentence_lab.evaluation.step_graphs`): its
        factors do not follow the step count on the host (Adam's come from ``step_count`` in its fused kernel)."""
        if self.method == "adam":
            return self._fused_adam(p)
        return self.method in ("rmsprop", "adadelta") or (self.method == "sgd" and self.hp["momentum"] == 0)

    def warm_up(self, params: list[torch.Tensor], grads: list[torch.Tensor], step_count: torch.Tensor) -> None:
        """One step on copies, so that every kernel's first call comes before a recording; changes nothing here."""
        state, steps = self.state, self.steps
        self.state = [{k: v.clone() for k, v in st.items()} for st in state]
        try:
            self.step([p.clone() for p in params], [g.clone() for g in grads], step_count=step_count.clone())
        finally:
            self.state = state
            self._set_steps(steps)

    def step(self, params: list[torch.Tensor], grads: list[torch.Tensor], active: np.ndarray | None = None,
             step_count: torch.Tensor | None = None) -> None:
        """One update of the groups ``active`` (None: all). ``step_count``: the step's count (after it) as a float32
        tensor on the parameters' device, for fused Adam inside a recording; otherwise made from the host's count."""
        if active is not None:
            frozen = torch.as_tensor(np.flatnonzero(~active), device=params[0].device)
            saved = [(t, t[frozen]) for p, st in zip(params, self.state) for t in (p, *st.values())]
            steps_before = self.steps
        self.steps = self.steps + 1
        hp, method = self.hp, self.method
        for p, g, st, t in zip(params, grads, self.state, self.tmp):
            if self.decay:
                g.addcmul_(p, _per_group(self.wd, p))
            if self._fused_adam(p):  # torch's fused Adam: the same rule in one kernel
                steps = step_count if step_count is not None else self._count_tensor(int(self.steps[0]), p.device)
                torch._fused_adam_([p], [g], [st["exp_avg"]], [st["exp_avg_sq"]], [], [steps], lr=hp["lr"],
                                   beta1=hp["beta1"], beta2=hp["beta2"], weight_decay=0.0, eps=hp["eps"],
                                   amsgrad=False, maximize=False)
            elif method == "adam":
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.lerp_(g, 1 - hp["beta1"])
                v.mul_(hp["beta2"]).addcmul_(g, g, value=1 - hp["beta2"])
                step_size = self._factor(lambda k: hp["lr"] / (1 - hp["beta1"] ** k), p)
                bc2_sqrt = self._factor(lambda k: (1 - hp["beta2"] ** k) ** 0.5, p)
                p.addcdiv_(m, torch.sqrt(v, out=t).div_(bc2_sqrt).add_(hp["eps"]).div_(step_size), value=-1)
            elif method == "adamax":
                m, u = st["exp_avg"], st["exp_inf"]
                m.lerp_(g, 1 - hp["beta1"])
                torch.maximum(u.mul_(hp["beta2"]), g.abs().add_(hp["eps"]), out=u)
                p.addcdiv_(m, torch.div(u, self._factor(lambda k: hp["lr"] / (1 - hp["beta1"] ** k), p), out=t),
                           value=-1)
            elif method == "rmsprop":
                v = st["square_avg"]
                v.mul_(hp["alpha"]).addcmul_(g, g, value=1 - hp["alpha"])
                if hp["centered"]:
                    st["grad_avg"].lerp_(g, 1 - hp["alpha"])
                    avg = torch.addcmul(v, st["grad_avg"], st["grad_avg"], value=-1, out=t).sqrt_().add_(hp["eps"])
                else:
                    avg = torch.sqrt(v, out=t).add_(hp["eps"])
                if hp["momentum"] > 0:
                    p.add_(st["momentum_buffer"].mul_(hp["momentum"]).addcdiv_(g, avg), alpha=-hp["lr"])
                else:
                    p.addcdiv_(g, avg, value=-hp["lr"])
            elif method == "sgd":
                if hp["momentum"] != 0:
                    buf, first = st["momentum_buffer"], self.steps == 1  # torch: the first buffer is the gradient
                    buf.mul_(hp["momentum"]).add_(g, alpha=1 - hp["dampening"])
                    if first.any():
                        buf.copy_(torch.where(_per_group(torch.as_tensor(first), p), g, buf))
                    g = g.add(buf, alpha=hp["momentum"]) if hp["nesterov"] else buf
                p.add_(g, alpha=-hp["lr"])
            elif method == "adagrad":
                st["sum"].addcmul_(g, g, value=1)
                clr = self._factor(lambda k: hp["lr"] / (1 + (k - 1) * hp["lr_decay"]), p)
                p.addcdiv_(g, torch.sqrt(st["sum"], out=t).add_(hp["eps"]).div_(clr), value=-1)
            else:  # adadelta
                v, acc = st["square_avg"], st["acc_delta"]
                v.mul_(hp["rho"]).addcmul_(g, g, value=1 - hp["rho"])
                delta = torch.add(acc, hp["eps"], out=t).sqrt_().div_(v.add(hp["eps"]).sqrt_()).mul_(g)
                acc.mul_(hp["rho"]).addcmul_(delta, delta, value=1 - hp["rho"])
                p.add_(delta, alpha=-hp["lr"])
        if active is not None:
            for t, old in saved:
                t[frozen] = old
            self._set_steps(np.where(active, self.steps, steps_before))


class EarlyStopping:
    """SentEval's rule per member: keep the best dev score; a check that does not improve stops training if
    ``tenacity`` non-improving checks came before it (the counter is never reset)."""

    def __init__(self, shape: tuple[int, int], tenacity: int):
        self.tenacity = tenacity
        self.best = np.full(shape, -1.0)
        self.count = np.zeros(shape, dtype=np.int64)
        self.alive = np.ones(shape, dtype=bool)
        self.nepoch = np.zeros(shape, dtype=np.int64)

    def update(self, rows: np.ndarray, scores: np.ndarray, nepoch: int) -> np.ndarray:
        """Record the scores ``[len(rows), L]`` of groups ``rows`` after ``nepoch`` epochs; return which improved."""
        alive = self.alive[rows]
        improved = alive & (scores > self.best[rows])
        worse = alive & ~improved
        self.best[rows] = np.where(improved, scores, self.best[rows])
        self.alive[rows] = alive & ~(worse & (self.count[rows] >= self.tenacity))
        self.count[rows] += worse
        self.nepoch[rows] = np.where(alive, nepoch, self.nepoch[rows])
        return improved


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
    """:func:`fit_members`' epochs through a :class:`~sentence_lab.evaluation.step_graphs.EpochGraph`, for epochs
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
