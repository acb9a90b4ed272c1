"""Every member of a stage as one tensor a layer, ``[G, L, out, in + 1]``, with its gradients written by hand for
SentEval's two losses (:class:`StackedProbe`)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from sentence_lab.evaluation.classifier import probe_kernels
from sentence_lab.evaluation.classifier.batch_plan import EpochSteps, Step

EVAL_BUDGET = 1 << 24  # floats materialised at once when scoring dev or test rows
GATHER_BUDGET = 1 << 24  # floats of training rows gathered at once, for as many steps of an epoch as they hold


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
        self._rows: torch.Tensor | None = None  # the torch path's gather buffers
        self._targets: torch.Tensor | None = None
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
            probe_kernels.linear_gradients(X.numpy(), T.numpy(), step.rows.numpy(), step.counts, weight,
                                           self._columns(self.params[0]).numpy(),
                                           self._columns(self.grads[0]).numpy(), loss == "softmax_mse")
            return self.grads
        G, B = step.rows.shape
        if self._rows is None or self._targets is None or len(self._rows) < G * B:
            self._rows = torch.empty(G * B, X.shape[1], dtype=X.dtype, device=T.device)
            self._targets = T.new_empty(G * B, T.shape[1])
        rows, targets = self._rows, self._targets
        Xb = self._gather(X, step.rows.view(-1), rows[: G * B]).view(G, B, -1)
        Tb = torch.index_select(T, 0, step.rows.view(-1), out=targets[: G * B])
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
