"""torch's single-tensor update rules on stacked members, with a weight decay per member and a step count per group
(:class:`MaskedOptimizer`)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from sentence_lab.evaluation.protocol import parse_optim


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
        """Whether a step can be recorded once and replayed (:mod:`.step_graphs`): its
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
