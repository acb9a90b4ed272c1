"""The classifier engine of the SentEval protocol: many classifiers trained as one batched model.

SentEval (``senteval/tools/classifier.py``) trains its logistic-regression / MLP probes one after
another. Every probe of a task (each fold x each L2 value) is independent and starts from the
same seed, so here they are trained together:

* members are laid out on a grid ``[G, L]``: ``G`` *groups* share a training set, a dev set and
  therefore (same seed, same training-set size) the very same minibatch sequence; ``L`` members
  of a group differ only in their L2 value. A group's minibatch is gathered once and multiplied
  with the stacked weights of its ``L`` members (``bmm``).
* each member's shuffling equals SentEval's: SentEval reseeds numpy's global RNG in every
  classifier's constructor, then draws the 5% validation split (when it has no dev set) and one
  permutation per epoch. That stream only depends on (seed, training-set size, split), so one
  ``np.random.RandomState(seed)`` per distinct stream serves all groups that share it.
* ragged epochs (groups of different sizes) are handled with padded index tensors, a row mask and
  a per-group batch count; a group whose epoch is over does not update (parameters, optimizer
  state and step counter are all frozen). A member that early-stopped keeps being updated with
  its group until the whole group stops: its kept (best) weights are frozen, nothing reads its
  live weights again, and members never mix (every column of the batched products, every
  softmax and every optimizer element is a member's own), so this is cheaper than masking and
  changes no result.
* linear probes (``nhid == 0``) under Adam or plain RMSprop run on preallocated buffers
  (:class:`_FastLinear`): the same floating-point operations on tensors of the same layouts,
  without the per-step allocation and conversions, bit-identical to the generic path.
* the gradient of the mean cross-entropy is written by hand and Adam / RMSprop / SGD apply
  torch's per-element update (``torch/optim/{adam,rmsprop,sgd}.py``, single-tensor path) with a
  per-member weight decay and step counter, so batched training equals sequential training
  up to float rounding.

:func:`fit_sequential` is the plain reference: one ``torch.nn`` model and ``torch.optim``
optimizer per member, trained the way SentEval's ``PyTorchClassifier.fit`` trains it.
Both return a :class:`FitResult`.

Dropout > 0 is supported by the batched engine, but its masks come from a different random
stream than SentEval's (which draws them from torch's global generator, member after member),
so with dropout the two engines agree in distribution only.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from evaluation.protocol import ProtocolParams, parse_optim, resolve_device

__all__ = [
    "Group",
    "FitResult",
    "fit_members",
    "fit_batched",
    "fit_sequential",
    "init_torch_model",
    "SequentialClassifier",
]

# Upper bound on the number of floats materialised at once when scoring dev / test sets.
_EVAL_BUDGET = 1 << 24
# Upper bound on the number of floats of minibatch inputs gathered at once (many steps at a time).
_GATHER_BUDGET = 1 << 18


@dataclass
class Group:
    """A training set shared by ``L`` members (one per L2 value).

    ``train_idx`` indexes rows of ``X``. ``dev_idx`` indexes rows of ``Xdev`` (or of ``X`` when no
    ``Xdev`` is given); ``None`` means SentEval's ``validation_split``: a random
    ``int(validation_split * n)`` of the training rows are held out for early stopping.
    """

    train_idx: np.ndarray
    dev_idx: np.ndarray | None = None
    validation_split: float = 0.05


@dataclass
class FitResult:
    """Best (early-stopping) weights and dev scores of a ``[G, L]`` grid of members.

    ``weights`` use the engine's stacked layout: nhid == 0: ``W [G, d, L, C]``, ``b [G, L, C]``;
    nhid > 0: ``W1 [G, d, L, h]``, ``b1 [G, L, h]``, ``W2 [G, L, h, C]``, ``b2 [G, L, C]``.
    """

    weights: list[torch.Tensor]
    best_correct: np.ndarray  # [G, L] dev examples right with the kept weights
    ndev: np.ndarray  # [G]
    nepoch: np.ndarray  # [G, L] epochs trained when the member stopped
    nhid: int
    nclasses: int

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.best_correct.shape)  # type: ignore[return-value]

    def dev_accuracy(self) -> np.ndarray:
        """SentEval's ``clf.score(devX, devy)`` (a fraction) per member, ``[G, L]``."""
        return self.best_correct / np.maximum(self.ndev, 1)[:, None]

    def member_weights(self, g: int, l: int) -> list[torch.Tensor]:
        """The member's weights with group and member axes of size 1 (engine layout)."""
        if self.nhid == 0:
            W, b = self.weights
            return [W[g : g + 1, :, l : l + 1], b[g : g + 1, l : l + 1]]
        W1, b1, W2, b2 = self.weights
        return [W1[g : g + 1, :, l : l + 1], b1[g : g + 1, l : l + 1], W2[g : g + 1, l : l + 1], b2[g : g + 1, l : l + 1]]

    @torch.no_grad()
    def predict(self, X: np.ndarray, g: int = 0, l: int = 0) -> np.ndarray:
        """Class ids (int64) predicted by member ``(g, l)`` for the rows of ``X``."""
        w = self.member_weights(g, l)
        Xt = _as_tensor(X, w[0].dtype, w[0].device)
        out = []
        step = max(1, _EVAL_BUDGET // max(1, Xt.shape[1], self.nhid, self.nclasses))
        for i in range(0, len(Xt), step):
            logits = _forward(Xt[i : i + step].unsqueeze(0), w, self.nhid)  # [1, n, 1, C]
            out.append(logits[0, :, 0].argmax(-1))
        if not out:
            return np.zeros(0, dtype=np.int64)
        return torch.cat(out).cpu().numpy().astype(np.int64)

    def score(self, X: np.ndarray, y: np.ndarray, g: int = 0, l: int = 0) -> float:
        """SentEval's ``clf.score``: fraction of rows predicted right."""
        yhat = self.predict(X, g, l)
        return 1.0 * int((yhat == np.asarray(y)).sum()) / len(yhat)


# ----------------------------------------------------------------------------------------------
# Shared pieces
# ----------------------------------------------------------------------------------------------
def init_torch_model(inputdim: int, nclasses: int, nhid: int, dropout: float, seed: int | None) -> nn.Sequential:
    """SentEval's MLP right after ``torch.manual_seed(seed)`` (built on the CPU, like SentEval).

    With ``seed=None`` the model is drawn from torch's current global generator (caller seeds).
    """
    def build():
        if nhid == 0:
            return nn.Sequential(nn.Linear(inputdim, nclasses))
        return nn.Sequential(
            nn.Linear(inputdim, nhid), nn.Dropout(p=dropout), nn.Sigmoid(), nn.Linear(nhid, nclasses)
        )

    if seed is None:
        return build()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _as_tensor(X, dtype, device) -> torch.Tensor:
    if isinstance(X, torch.Tensor):
        return X.to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(X), device=device).to(dtype)


def _forward(Xb: torch.Tensor, w: Sequence[torch.Tensor], nhid: int) -> torch.Tensor:
    """Eval-mode logits ``[G, B, L, C]`` of inputs ``[G, B, d]`` (no dropout)."""
    G, B, d = Xb.shape
    if nhid == 0:
        W, b = w
        L, C = W.shape[2], W.shape[3]
        return torch.bmm(Xb, W.reshape(G, d, L * C)).view(G, B, L, C) + b.unsqueeze(1)
    W1, b1, W2, b2 = w
    L, h = W1.shape[2], W1.shape[3]
    a = torch.sigmoid(torch.bmm(Xb, W1.reshape(G, d, L * h)).view(G, B, L, h) + b1.unsqueeze(1))
    return torch.einsum("gblh,glhc->gblc", a, W2) + b2.unsqueeze(1)


def _member_view(t: torch.Tensor, param: torch.Tensor, kind: str) -> torch.Tensor:
    """Broadcast a per-member ``[G, L]`` tensor against a parameter of the given layout kind."""
    if kind == "in":  # [G, d, L, o]
        return t[:, None, :, None]
    if kind == "bias":  # [G, L, o]
        return t[:, :, None]
    return t[:, :, None, None]  # "out": [G, L, h, C]


class _Stream:
    """SentEval's numpy draws for one (seed, n, validation_split): split, then one perm per epoch."""

    def __init__(self, seed: int, n_total: int, split: float | None):
        self.rs = np.random.RandomState(seed)
        if split is not None:
            perm = self.rs.permutation(n_total)
            cut = int(split * n_total)
            self.train_pos, self.dev_pos = perm[cut:], perm[0:cut]
            self.n = n_total - cut
        else:
            self.train_pos = self.dev_pos = None
            self.n = n_total
        self._epoch = -1
        self._perm: np.ndarray | None = None

    def perm(self, epoch: int) -> np.ndarray:
        # All users of a stream are in lockstep, so epochs are asked for in increasing order.
        while self._epoch < epoch:
            self._perm = self.rs.permutation(self.n)
            self._epoch += 1
        assert self._epoch == epoch and self._perm is not None
        return self._perm


def _resolve_groups(groups: Sequence[Group], seed: int):
    """Per group: global train indices, dev indices and the shared permutation stream."""
    streams: dict[tuple, _Stream] = {}
    out = []
    for grp in groups:
        tr = np.asarray(grp.train_idx, dtype=np.int64)
        split = None if grp.dev_idx is not None else float(grp.validation_split)
        key = (len(tr), split)
        if key not in streams:
            streams[key] = _Stream(seed, len(tr), split)
        st = streams[key]
        if split is None:
            train, dev = tr, np.asarray(grp.dev_idx, dtype=np.int64)
        else:
            train, dev = tr[st.train_pos], tr[st.dev_pos]
        out.append((train, dev, st))
    return out


def _check_l2(l2, G: int) -> np.ndarray:
    l2 = np.asarray(l2, dtype=np.float64)
    if l2.ndim == 1:
        l2 = np.broadcast_to(l2[None, :], (G, len(l2)))
    if l2.shape[0] != G:
        raise ValueError(f"l2 has {l2.shape[0]} rows for {G} groups")
    return np.array(l2, dtype=np.float64, copy=True)


# ----------------------------------------------------------------------------------------------
# Batched engine
# ----------------------------------------------------------------------------------------------
class _Optim:
    """torch's Adam / RMSprop / SGD update, element-wise, with per-member weight decay and step."""

    def __init__(self, method: str, hp: dict, params: list[torch.Tensor], kinds: list[str], wd: torch.Tensor):
        self.method, self.hp, self.kinds = method, hp, kinds
        self.wd = wd  # [G, L]
        self.step_t = torch.zeros(wd.shape, dtype=torch.float64, device=wd.device)
        self.state: list[list[torch.Tensor]] = []
        for p in params:
            if method == "adam":
                self.state.append([torch.zeros_like(p), torch.zeros_like(p)])
            elif method == "rmsprop":
                st = [torch.zeros_like(p)]
                if hp["momentum"] > 0:
                    st.append(torch.zeros_like(p))
                if hp["centered"]:
                    st.append(torch.zeros_like(p))
                self.state.append(st)
            else:
                self.state.append([torch.zeros_like(p)] if hp["momentum"] != 0 else [])

    def select(self, keep: torch.Tensor) -> None:
        self.wd = self.wd[keep]
        self.step_t = self.step_t[keep]
        self.state = [[s[keep] for s in st] for st in self.state]

    def step(self, params: list[torch.Tensor], grads: list[torch.Tensor], upd: torch.Tensor | None) -> None:
        """Update in place; members with ``upd == False`` keep parameters, state and step."""
        if upd is not None:
            saved = [p.clone() for p in params] + [s.clone() for st in self.state for s in st]
            self.step_t += upd.to(self.step_t.dtype)
        else:
            self.step_t += 1
        hp, dt = self.hp, params[0].dtype
        if self.method == "adam":
            b1, b2 = hp["beta1"], hp["beta2"]
            step_size = (hp["lr"] / (1 - b1**self.step_t)).to(dt)
            bc2_sqrt = torch.sqrt(1 - b2**self.step_t).to(dt)
        wd = self.wd.to(dt)
        for p, g, kind, st in zip(params, grads, self.kinds, self.state):
            g = g.add(p * _member_view(wd, p, kind))
            if self.method == "adam":
                m, v = st
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v.sqrt() / _member_view(bc2_sqrt, p, kind)).add_(hp["eps"])
                p.sub_((m / denom) * _member_view(step_size, p, kind))
            elif self.method == "rmsprop":
                v = st[0]
                alpha = hp["alpha"]
                v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                if hp["centered"]:
                    ga = st[-1]
                    ga.lerp_(g, 1 - alpha)
                    avg = v.addcmul(ga, ga, value=-1).sqrt_()
                else:
                    avg = v.sqrt()
                avg = avg.add_(hp["eps"])
                if hp["momentum"] > 0:
                    buf = st[1]
                    buf.mul_(hp["momentum"]).addcdiv_(g, avg)
                    p.add_(buf, alpha=-hp["lr"])
                else:
                    p.addcdiv_(g, avg, value=-hp["lr"])
            else:  # sgd
                if hp["momentum"] != 0:
                    buf = st[0]
                    first = _member_view(self.step_t == 1, p, kind)
                    buf.copy_(torch.where(first, g, buf * hp["momentum"] + g * (1 - hp["dampening"])))
                    g = g.add(buf, alpha=hp["momentum"]) if hp["nesterov"] else buf
                p.add_(g, alpha=-hp["lr"])
        if upd is not None:
            live = [p for p in params] + [s for st in self.state for s in st]
            kinds = list(self.kinds) + [k for k, st in zip(self.kinds, self.state) for _ in st]
            for t, old, kind in zip(live, saved, kinds):
                t.copy_(torch.where(_member_view(upd, t, kind), t, old))


class _FastLinear:
    """Adam / RMSprop training of a linear probe (``nhid == 0``) on preallocated buffers.

    Every floating-point operation of :func:`_grads` and :meth:`_Optim.step` is kept, in the
    same order; the ones that are not exactly rounded (``bmm``, ``exp``, reductions over more than
    two numbers, ``lerp_``, ``addcmul_``, ``addcdiv_``) run on tensors of the same shapes and
    layouts as there, so the same vectorised / scalar kernel paths run. Only the per-step overhead
    is gone: no allocation (``out=`` / in-place ops on buffers sized once per set of live groups),
    per-member factors materialised once (or filled once per step), Adam's bias corrections
    computed once per step count (in float64, as torch does, then rounded to the parameter
    dtype), minibatches gathered for many steps at once, and ``W`` and ``b`` updated as one flat
    tensor where that keeps every kernel path (:meth:`_flat_ok`). Results are bit-identical to the
    generic path (tests/evaluation/test_classifier_fast.py). bow_glove, 1 thread: SST2 (full)
    fit 7.2 s -> 2.1 s, MR (full, 100 + 10 groups) 18.2 s -> 8.7 s.

    Members that early-stopped keep being updated (their weights are never read again: their
    kept weights are ``best_w``, and every column of the batched products is independent), so
    the only masked steps are those of groups whose epoch is over (ragged epochs); there, the
    parameters, state and step count of those groups are restored.
    """

    def __init__(self, method: str, hp: dict, w: list[torch.Tensor], wd: torch.Tensor, B: int):
        self.method, self.hp, self.B = method, hp, B
        self.w = w  # [W [G, d, L, C], b [G, L, C]]
        self.wd = wd  # [G, L] float64
        # Adam's step count per group (members of a group move together): ``k`` for all groups
        # while ``step_n`` is None, else ``step_n [G]`` (after ragged epochs).
        self.k, self.step_n = 0, None
        nst = 2 if method == "adam" else 1
        self.state = [[torch.zeros_like(p) for _ in range(nst)] for p in w]
        self._cache: dict[int, tuple[float, float]] = {}
        self._alloc()

    def _alloc(self) -> None:
        W, b = self.w
        G, d, L, C = W.shape
        B, dt, dev = self.B, W.dtype, W.device
        self.shape = (G, d, L, C)
        self.lg3 = torch.empty((G, B, L * C), dtype=dt, device=dev)
        self.lg4 = self.lg3.view(G, B, L, C)
        self.red = torch.empty((G, B, L, 1), dtype=dt, device=dev)
        self.two = C == 2
        self.lo, self.hi = self.lg4[..., :1], self.lg4[..., 1:]
        nW, nb = W.numel(), b.numel()
        gP = torch.empty(nW + nb, dtype=dt, device=dev)
        self.gW, self.gb = gP[:nW].view(G, d, L, C), gP[nW:].view(G, L, C)
        self.gW3 = self.gW.view(G, d, L * C)
        # Per-member factors materialised at the parameters' shapes: element-wise products and
        # quotients are exactly rounded, so this equals broadcasting, with contiguous loops.
        wd = self.wd.to(dt)
        kinds = ["in", "bias"]
        wdf = [_member_view(wd, p, kind).expand(p.shape).contiguous() for p, kind in zip(self.w, kinds)]
        if self._flat_ok(nW, nb, dt):
            # One flat tensor per quantity: half the optimizer's kernel launches.
            cat = lambda ts: torch.cat([t.reshape(-1) for t in ts])  # noqa: E731
            P = cat(self.w)
            self.w = [P[:nW].view(G, d, L, C), P[nW:].view(G, L, C)]
            flat_state = [cat([st[i] for st in self.state]) for i in range(len(self.state[0]))]
            self.state = [[t[:nW].view(G, d, L, C) for t in flat_state], [t[nW:].view(G, L, C) for t in flat_state]]
            SS, BC = torch.empty_like(P), torch.empty_like(P)  # Adam step size, sqrt(bias corr. 2)
            self.factor_bufs = [(SS, BC)]
            self.factor_views = [(p, kind, SS[o : o + p.numel()].view(p.shape), BC[o : o + p.numel()].view(p.shape))
                                 for p, kind, o in zip(self.w, kinds, (0, nW))]
            self.items = [(P, gP, flat_state, torch.empty_like(P), cat(wdf), SS, BC)]
        else:
            self.items, self.factor_bufs, self.factor_views = [], [], []
            for p, g, st, kind, wdv in zip(self.w, [self.gW, self.gb], self.state, kinds, wdf):
                ssv, bcv = torch.empty_like(p), torch.empty_like(p)
                self.factor_bufs.append((ssv, bcv))
                self.factor_views.append((p, kind, ssv, bcv))
                self.items.append((p, g, st, torch.empty_like(p), wdv, ssv, bcv))
        self.Wv = self.w[0].view(G, d, L * C)
        self.bu = self.w[1].unsqueeze(1)

    @staticmethod
    def _flat_ok(nW: int, nb: int, dtype: torch.dtype = torch.float32) -> bool:
        """Whether ``cat(W, b)`` sends every element down the same kernel path as ``W`` and ``b`` alone.

        Fused kernels (``lerp_``'s vectorised path uses an FMA) round differently in the
        vectorised body and the scalar tail of torch's CPU loops (bodies in chunks of two 32- or
        64-byte vectors, AVX2 / AVX-512; one chunk list per thread above 32768 elements). The flat
        layout is used only where the body / tail split of each element is unchanged.
        """
        n = nW + nb
        if n > 32768 and torch.get_num_threads() > 1:
            return False
        size = torch.empty(0, dtype=dtype).element_size()
        return all(nW // K == n // K and nb < K for K in (64 // size, 128 // size))

    def select(self, keep: torch.Tensor) -> None:
        self.w = [t[keep] for t in self.w]
        self.wd = self.wd[keep]
        if self.step_n is not None:
            self._set_steps(self.step_n[keep.cpu().numpy()])
        self.state = [[s[keep] for s in st] for st in self.state]
        self._alloc()

    def _set_steps(self, steps: np.ndarray) -> None:
        if len(steps) and (steps == steps[0]).all():
            self.k, self.step_n = int(steps[0]), None
        else:
            self.step_n = steps

    def _factors(self, k: int) -> tuple[float, float]:
        # torch's ``(lr / (1 - b1**step)).to(dt)``: ``lr / t`` is ``t.reciprocal() * lr``.
        f = self._cache.get(k)
        if f is None:
            b1, b2 = self.hp["beta1"], self.hp["beta2"]
            ss = (1.0 / (1.0 - b1 ** float(k))) * self.hp["lr"]
            bc = math.sqrt(1.0 - b2 ** float(k))
            f = self._cache[k] = (ss, bc)
        return f

    def step(self, Xb: torch.Tensor, XbT: torch.Tensor, yb: torch.Tensor, coef4: torch.Tensor,
             upd: np.ndarray | None) -> None:
        """One minibatch: ``Xb [G, B, d]``, ``XbT`` its transpose, ``yb [G, B, 1, C]`` one-hot,
        ``coef4 [G, B, 1, 1]`` (both may be expanded to ``[G, B, L, C]``); ``upd [G]`` (bool) or None
        for all groups."""
        # _grads, nhid == 0
        lg = self.lg4
        torch.bmm(Xb, self.Wv, out=self.lg3)
        lg.add_(self.bu)
        if self.two:  # max and sum of two numbers are exact: same values, no slow reduction
            torch.maximum(self.lo, self.hi, out=self.red)
            lg.sub_(self.red).exp_()
            torch.add(self.lo, self.hi, out=self.red)
        else:
            torch.amax(lg, -1, keepdim=True, out=self.red)
            lg.sub_(self.red).exp_()
            torch.sum(lg, -1, keepdim=True, out=self.red)
        lg.div_(self.red)
        lg.sub_(yb)
        lg.mul_(coef4)
        torch.bmm(XbT, self.lg3, out=self.gW3)
        torch.sum(lg, 1, out=self.gb)

        if upd is not None:
            frozen = torch.as_tensor(np.flatnonzero(~upd), device=lg.device)
            saved = [t[frozen] for t in self.w] + [s[frozen] for st in self.state for s in st]
            steps = np.full(len(upd), self.k, dtype=np.int64) if self.step_n is None else self.step_n
            self._set_steps(steps + upd)
        elif self.step_n is None:
            self.k += 1
        else:
            self.step_n += 1
        hp = self.hp
        if self.method == "adam":
            if self.step_n is None:
                ss, bc = self._factors(self.k)
                for ssv, bcv in self.factor_bufs:
                    ssv.fill_(ss)
                    bcv.fill_(bc)
            else:
                f = torch.as_tensor(np.array([self._factors(int(k)) for k in self.step_n]))  # [G, 2] float64
                L = self.shape[2]
                ss, bc = f[:, :1].expand(-1, L), f[:, 1:].expand(-1, L)
                for p, kind, ssv, bcv in self.factor_views:
                    ssv.copy_(_member_view(ss, p, kind).expand(p.shape))
                    bcv.copy_(_member_view(bc, p, kind).expand(p.shape))
            b1, b2, eps = hp["beta1"], hp["beta2"], hp["eps"]
            for p, g, (m, v), t, wdv, ssv, bcv in self.items:
                torch.mul(p, wdv, out=t)
                g.add_(t)
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                torch.sqrt(v, out=t)
                t.div_(bcv).add_(eps)
                torch.div(m, t, out=t)
                t.mul_(ssv)
                p.sub_(t)
        else:  # rmsprop, no momentum, not centred
            alpha, eps, lr = hp["alpha"], hp["eps"], hp["lr"]
            for p, g, (v,), t, wdv, _, _ in self.items:
                torch.mul(p, wdv, out=t)
                g.add_(t)
                v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                torch.sqrt(v, out=t)
                t.add_(eps)
                p.addcdiv_(g, t, value=-lr)

        if upd is not None:
            live = self.w + [s for st in self.state for s in st]
            for t, old in zip(live, saved):
                t[frozen] = old

    @staticmethod
    def supports(method: str, hp: dict, nhid: int) -> bool:
        if nhid != 0:
            return False
        if method == "adam":
            return True
        return method == "rmsprop" and hp["momentum"] == 0 and not hp["centered"]


def _grads(Xb, yb, coef, w, nhid, dropout, gen):
    """Gradients of sum over members of the member's mean cross-entropy on its batch.

    ``yb`` is the one-hot target ``[G, B, C]``; ``coef`` is ``mask / rows`` ``[G, B]``.
    """
    G, B, d = Xb.shape
    if nhid == 0:
        W, b = w
        L, C = W.shape[2], W.shape[3]
        logits = torch.bmm(Xb, W.reshape(G, d, L * C)).view(G, B, L, C) + b.unsqueeze(1)
    else:
        W1, b1, W2, b2 = w
        L, h = W1.shape[2], W1.shape[3]
        z1 = torch.bmm(Xb, W1.reshape(G, d, L * h)).view(G, B, L, h) + b1.unsqueeze(1)
        if dropout > 0:
            keep = (torch.rand(z1.shape, generator=gen, device=z1.device, dtype=z1.dtype) >= dropout).to(z1.dtype)
            keep = keep / (1 - dropout)
            z1 = z1 * keep
        a = torch.sigmoid(z1)
        C = W2.shape[3]
        logits = torch.einsum("gblh,glhc->gblc", a, W2) + b2.unsqueeze(1)
    # softmax(logits) - onehot(y), scaled by 1 / (rows in the member's batch); torch.softmax is
    # slow over a last dimension of 2, so spell it out.
    dl = (logits - logits.amax(-1, keepdim=True)).exp_()
    dl.div_(dl.sum(-1, keepdim=True))
    dl.sub_(yb.unsqueeze(2))
    dl.mul_(coef.reshape(G, B, 1, 1))
    if nhid == 0:
        gW = torch.bmm(Xb.transpose(1, 2), dl.reshape(G, B, L * C)).view(G, d, L, C)
        return [gW, dl.sum(1)]
    gW2 = torch.einsum("gblh,gblc->glhc", a, dl)
    gb2 = dl.sum(1)
    dz = torch.einsum("gblc,glhc->gblh", dl, W2).mul_(a * (1 - a))
    if dropout > 0:
        dz.mul_(keep)
    gW1 = torch.bmm(Xb.transpose(1, 2), dz.reshape(G, B, L * h)).view(G, d, L, h)
    return [gW1, dz.sum(1), gW2, gb2]


@torch.no_grad()
def _count_correct(w, nhid, Xsrc, ysrc, dev_idx: torch.Tensor, dev_mask: torch.Tensor) -> torch.Tensor:
    """Dev examples right per member ``[G, L]``; dev sets are padded ``[G, Nd]`` index rows."""
    G, Nd = dev_idx.shape
    L = w[0].shape[2]
    width = max(Xsrc.shape[1], L * (nhid or 1), L * w[-1].shape[-1])
    chunk = max(1, _EVAL_BUDGET // max(1, Nd * width))
    out = []
    for s in range(0, G, chunk):
        sl = slice(s, s + chunk)
        logits = _forward(Xsrc[dev_idx[sl]], [t[sl] for t in w], nhid)  # [g, Nd, L, C]
        right = logits.argmax(-1) == ysrc[dev_idx[sl]].unsqueeze(-1)
        out.append((right & dev_mask[sl].unsqueeze(-1)).sum(1))
    return torch.cat(out) if out else torch.zeros((0, L), dtype=torch.long, device=Xsrc.device)


def _pad_rows(rows: list[np.ndarray], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    width = max((len(r) for r in rows), default=0) if width is None else width
    idx = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=bool)
    for i, r in enumerate(rows):
        idx[i, : len(r)] = r
        mask[i, : len(r)] = True
    return idx, mask


def fit_batched(
    X,
    y,
    groups: Sequence[Group],
    l2,
    params: ProtocolParams,
    nclasses: int,
    *,
    Xdev=None,
    ydev=None,
    dtype: torch.dtype = torch.float32,
    device: str | None = None,
) -> FitResult:
    """Train the ``[G, L]`` grid of SentEval classifiers at once.

    ``l2`` is ``[L]`` (same values for every group) or ``[G, L]``.
    """
    G = len(groups)
    l2 = _check_l2(l2, G)
    L = l2.shape[1]
    dev = torch.device(resolve_device(device or params.device))
    method, hp = parse_optim(params.optim)
    nhid, B = int(params.nhid), int(params.batch_size)

    Xt = _as_tensor(X, dtype, dev)
    yt = torch.as_tensor(np.asarray(y), device=dev).long()
    onehot = torch.nn.functional.one_hot(yt, nclasses).to(dtype)
    if Xdev is not None:
        Xd, yd = _as_tensor(Xdev, dtype, dev), torch.as_tensor(np.asarray(ydev), device=dev).long()
    else:
        Xd, yd = Xt, yt
    d = Xt.shape[1]

    resolved = _resolve_groups(groups, params.seed)
    g_train = [r[0] for r in resolved]
    g_stream = [r[2] for r in resolved]
    ndev = np.array([len(r[1]) for r in resolved], dtype=np.int64)
    dev_idx_np, dev_mask_np = _pad_rows([r[1] for r in resolved])
    dev_idx_all = torch.as_tensor(dev_idx_np, device=dev)
    dev_mask_all = torch.as_tensor(dev_mask_np, device=dev)

    # Identical initial weights for every member (SentEval reseeds torch in each constructor).
    model = init_torch_model(d, nclasses, nhid, float(params.dropout), params.seed)
    lins = [m for m in model if isinstance(m, nn.Linear)]
    if nhid == 0:
        w0 = [lins[0].weight.detach().t(), lins[0].bias.detach()]
        kinds = ["in", "bias"]
        shapes = [(G, d, L, nclasses), (G, L, nclasses)]
        views = [w0[0][None, :, None, :], w0[1][None, None, :]]
    else:
        w0 = [lins[0].weight.detach().t(), lins[0].bias.detach(), lins[1].weight.detach().t(), lins[1].bias.detach()]
        kinds = ["in", "bias", "out", "bias"]
        shapes = [(G, d, L, nhid), (G, L, nhid), (G, L, nhid, nclasses), (G, L, nclasses)]
        views = [w0[0][None, :, None, :], w0[1][None, None, :], w0[2][None, None], w0[3][None, None, :]]
    w = [v.to(device=dev, dtype=dtype).expand(s).contiguous() for v, s in zip(views, shapes)]
    best_w = [t.clone() for t in w]

    fast = _FastLinear.supports(method, hp, nhid)
    if fast:
        opt = _FastLinear(method, hp, w, torch.as_tensor(l2, device=dev), B)
        w = opt.w
    else:
        opt = _Optim(method, hp, w, kinds, torch.as_tensor(l2, device=dev))
    gen = torch.Generator(device=dev)
    gen.manual_seed(params.seed)

    alive = np.ones((G, L), dtype=bool)
    best = np.full((G, L), -1, dtype=np.int64)
    count = np.zeros((G, L), dtype=np.int64)
    nepoch_stop = np.zeros((G, L), dtype=np.int64)
    live = np.arange(G)  # groups with at least one member still training
    live_t = torch.as_tensor(live, device=dev)
    nepoch = 0
    while alive.any() and nepoch <= params.max_epoch:
        for epoch in range(nepoch, nepoch + params.epoch_size):
            perms = {}
            rows = []
            for g in live:
                st = g_stream[g]
                if id(st) not in perms:
                    perms[id(st)] = st.perm(epoch)
                rows.append(g_train[g][perms[id(st)]])
            nmax = max(len(r) for r in rows)
            S = -(-nmax // B)
            idx_np, mask_np = _pad_rows(rows, S * B)
            cnt_np = mask_np.reshape(len(live), S, B).sum(-1)  # [Ga, S]
            coef_np = mask_np.reshape(len(live), S, B) / np.maximum(cnt_np, 1)[:, :, None]
            has_batch = cnt_np > 0  # [Ga, S]
            # Members that early-stopped keep training (nothing reads their weights again; see
            # _FastLinear), so the only masked steps are those of groups whose epoch is over.
            full = has_batch.all(0)  # [S]
            if fast:
                Ga = len(live)
                idx = torch.as_tensor(idx_np.reshape(Ga, S, B).transpose(1, 0, 2).copy(), device=dev)  # [S, Ga, B]
                coef = torch.as_tensor(coef_np.transpose(1, 0, 2).copy(), device=dev, dtype=dtype)  # [S, Ga, B]
                coef = coef.view(S, Ga, B, 1, 1).unbind(0)
                chunk = max(1, _GATHER_BUDGET // (Ga * B * max(d, L * nclasses)))
                for s0 in range(0, S, chunk):
                    ic = idx[s0 : s0 + chunk]
                    k = len(ic)
                    Xc = torch.index_select(Xt, 0, ic.reshape(-1)).view(k, Ga, B, d)
                    Yc = torch.index_select(onehot, 0, ic.reshape(-1)).view(k, Ga, B, 1, nclasses)
                    Yc = Yc.expand(k, Ga, B, L, nclasses).contiguous()
                    Cc = torch.stack(coef[s0 : s0 + k]).expand(k, Ga, B, L, nclasses).contiguous().unbind(0)
                    for j, (Xb, XbT, yb) in enumerate(zip(Xc.unbind(0), Xc.transpose(2, 3).unbind(0), Yc.unbind(0))):
                        s = s0 + j
                        opt.step(Xb, XbT, yb, Cc[j], None if full[s] else has_batch[:, s])
                w = opt.w
                continue
            idx = torch.as_tensor(idx_np, device=dev).view(len(live), S, B)
            coef = torch.as_tensor(coef_np, device=dev, dtype=dtype)
            for s in range(S):
                bi = idx[:, s]
                grads = _grads(Xt[bi], onehot[bi], coef[:, s], w, nhid, float(params.dropout), gen)
                if full[s]:
                    opt.step(w, grads, None)
                else:
                    upd = torch.as_tensor(has_batch[:, s], device=dev)[:, None].expand(len(live), L)
                    opt.step(w, grads, upd)
        nepoch += params.epoch_size

        correct = _count_correct(w, nhid, Xd, yd, dev_idx_all[live_t], dev_mask_all[live_t]).cpu().numpy()
        a_live = alive[live]
        improved = a_live & (correct > best[live])
        if improved.any():
            imp_t = torch.as_tensor(improved, device=dev)
            for bw, cw, kind in zip(best_w, w, kinds):
                bw[live_t] = torch.where(_member_view(imp_t, cw, kind), cw, bw[live_t])
        best[live] = np.where(improved, correct, best[live])
        nonimp = a_live & ~improved
        stop = nonimp & (count[live] >= params.tenacity)
        count[live] += nonimp
        alive[live] = a_live & ~stop
        nepoch_stop[live] = np.where(a_live, nepoch, nepoch_stop[live])

        keep = alive[live].any(1)
        if not keep.all() and keep.any():
            keep_t = torch.as_tensor(keep, device=dev)
            if fast:
                opt.select(keep_t)
                w = opt.w
            else:
                w = [t[keep_t] for t in w]
                opt.select(keep_t)
            live = live[keep]
            live_t = torch.as_tensor(live, device=dev)
        elif not keep.any():
            break

    return FitResult(best_w, best, ndev, nepoch_stop, nhid, nclasses)


# ----------------------------------------------------------------------------------------------
# Sequential reference engine
# ----------------------------------------------------------------------------------------------
def _torch_optimizer(method: str, hp: dict, parameters, l2reg: float):
    if method == "adam":
        return torch.optim.Adam(parameters, lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"], weight_decay=l2reg)
    if method == "rmsprop":
        return torch.optim.RMSprop(
            parameters, lr=hp["lr"], alpha=hp["alpha"], eps=hp["eps"], weight_decay=l2reg,
            momentum=hp["momentum"], centered=bool(hp["centered"]),
        )
    return torch.optim.SGD(
        parameters, lr=hp["lr"], momentum=hp["momentum"], dampening=hp["dampening"],
        weight_decay=l2reg, nesterov=bool(hp["nesterov"]),
    )


class SequentialClassifier:
    """One SentEval ``MLP`` probe, trained exactly as ``PyTorchClassifier.fit`` trains it.

    Differences are only in plumbing: numpy draws come from a private ``RandomState(seed)``
    (SentEval reseeds the global one in the constructor: same numbers), torch's global generator
    is forked so callers are not disturbed, and tensors live on ``device``.
    """

    def __init__(self, inputdim: int, nclasses: int, l2reg: float, params: ProtocolParams,
                 dtype: torch.dtype = torch.float32, device: str | None = None):
        self.params, self.l2reg, self.nclasses = params, l2reg, nclasses
        self.device = torch.device(resolve_device(device or params.device))
        self.dtype = dtype
        self.rs = np.random.RandomState(params.seed)
        self._torch_state = None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(params.seed)
            self.model = init_torch_model(inputdim, nclasses, params.nhid, params.dropout, None)
            self._torch_state = torch.get_rng_state()
        self.model = self.model.to(device=self.device, dtype=dtype)
        method, hp = parse_optim(params.optim)
        self.optimizer = _torch_optimizer(method, hp, self.model.parameters(), l2reg)
        self.loss_fn = nn.CrossEntropyLoss()

    def fit(self, X, y, validation_data=None, validation_split=None):
        p = self.params
        if validation_data is not None:
            trainX, trainy = X, y
            devX, devy = validation_data
        else:
            permutation = self.rs.permutation(len(X))
            cut = int(validation_split * len(X))
            trainidx, devidx = permutation[cut:], permutation[0:cut]
            trainX, trainy, devX, devy = X[trainidx], y[trainidx], X[devidx], y[devidx]
        trainX = _as_tensor(trainX, self.dtype, self.device)
        trainy = torch.as_tensor(np.asarray(trainy), device=self.device).long()
        self.nepoch = 0
        bestaccuracy = -1
        stop_train = False
        early_stop_count = 0
        bestmodel = copy.deepcopy(self.model)
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_state)  # dropout masks continue SentEval's stream
            while not stop_train and self.nepoch <= p.max_epoch:
                self._trainepoch(trainX, trainy, p.epoch_size)
                accuracy = self.score(devX, devy)
                if accuracy > bestaccuracy:
                    bestaccuracy = accuracy
                    bestmodel = copy.deepcopy(self.model)
                else:
                    if early_stop_count >= p.tenacity:
                        stop_train = True
                    early_stop_count += 1
        self.model = bestmodel
        self.bestaccuracy = bestaccuracy
        return bestaccuracy

    def _trainepoch(self, X, y, epoch_size):
        self.model.train()
        B = self.params.batch_size
        for _ in range(epoch_size):
            permutation = torch.as_tensor(self.rs.permutation(len(X)), device=self.device)
            for i in range(0, len(X), B):
                idx = permutation[i : i + B]
                loss = self.loss_fn(self.model(X[idx]), y[idx])
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        self.nepoch += epoch_size

    @torch.no_grad()
    def predict(self, X) -> np.ndarray:
        self.model.eval()
        Xt = _as_tensor(X, self.dtype, self.device)
        out = [self.model(Xt[i : i + self.params.batch_size]).argmax(1) for i in range(0, len(Xt), self.params.batch_size)]
        return torch.cat(out).cpu().numpy().astype(np.int64) if out else np.zeros(0, np.int64)

    def score(self, X, y) -> float:
        yhat = self.predict(X)
        return 1.0 * int((yhat == np.asarray(y)).sum()) / len(yhat)


def fit_sequential(
    X,
    y,
    groups: Sequence[Group],
    l2,
    params: ProtocolParams,
    nclasses: int,
    *,
    Xdev=None,
    ydev=None,
    dtype: torch.dtype = torch.float32,
    device: str | None = None,
) -> FitResult:
    """Reference engine: each member is its own :class:`SequentialClassifier`, one at a time."""
    G = len(groups)
    l2 = _check_l2(l2, G)
    L = l2.shape[1]
    X = np.asarray(X)
    y = np.asarray(y)
    Xd, yd = (X, y) if Xdev is None else (np.asarray(Xdev), np.asarray(ydev))
    members = [[None] * L for _ in range(G)]
    best = np.zeros((G, L), dtype=np.int64)
    nep = np.zeros((G, L), dtype=np.int64)
    ndev = np.zeros(G, dtype=np.int64)
    for g, grp in enumerate(groups):
        tr = np.asarray(grp.train_idx)
        for l in range(L):
            clf = SequentialClassifier(X.shape[1], nclasses, float(l2[g, l]), params, dtype, device)
            if grp.dev_idx is not None:
                dv = np.asarray(grp.dev_idx)
                acc = clf.fit(X[tr], y[tr], validation_data=(Xd[dv], yd[dv]))
                ndev[g] = len(dv)
            else:
                acc = clf.fit(X[tr], y[tr], validation_split=grp.validation_split)
                ndev[g] = int(grp.validation_split * len(tr))
            best[g, l] = int(round(acc * ndev[g]))
            nep[g, l] = clf.nepoch
            members[g][l] = clf
    # Stack into the engine layout.
    lin = lambda c: [m for m in c.model if isinstance(m, nn.Linear)]  # noqa: E731
    if params.nhid == 0:
        W = torch.stack([torch.stack([lin(c)[0].weight.detach().t() for c in row], 1) for row in members])
        b = torch.stack([torch.stack([lin(c)[0].bias.detach() for c in row]) for row in members])
        weights = [W, b]
    else:
        W1 = torch.stack([torch.stack([lin(c)[0].weight.detach().t() for c in row], 1) for row in members])
        b1 = torch.stack([torch.stack([lin(c)[0].bias.detach() for c in row]) for row in members])
        W2 = torch.stack([torch.stack([lin(c)[1].weight.detach().t() for c in row]) for row in members])
        b2 = torch.stack([torch.stack([lin(c)[1].bias.detach() for c in row]) for row in members])
        weights = [W1, b1, W2, b2]
    return FitResult(weights, best, ndev, nep, params.nhid, nclasses)


def fit_members(X, y, groups, l2, params, nclasses, *, engine: str = "batched", **kw) -> FitResult:
    """Dispatch to :func:`fit_batched` (default) or the sequential reference :func:`fit_sequential`."""
    if engine == "batched":
        return fit_batched(X, y, groups, l2, params, nclasses, **kw)
    if engine == "sequential":
        return fit_sequential(X, y, groups, l2, params, nclasses, **kw)
    raise ValueError(f"unknown engine {engine!r}")
