"""Parameters of the SentEval classifier protocol (prototyping and paper-comparable sets).

As SentEval's reference code (facebookresearch/SentEval at 5d6dc11) evaluates; docs/evaluation.md says how each
regime runs. The optimizer string follows SentEval's
``get_optimizer`` syntax: ``"adam"`` or ``"adam,lr=0.001"``; unspecified hyper-parameters
take torch's defaults, exactly as SentEval constructs ``optim_fn(params, **optim_params)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from sentence_lab.evaluation.probing.controls import FUNCTIONS as CONTROL_FUNCTIONS

__all__ = ["BACKENDS", "ProtocolParams", "PROTOTYPE", "FULL", "parse_optim", "resolve_device", "OPTIM_DEFAULTS"]


BACKENDS = ("pytorch", "sklearn")


@dataclass(frozen=True)
class ProtocolParams:
    name: str = "prototype"  # or "full"
    kfold: int = 5  # full: 10
    optim: str = "rmsprop"  # full: "adam"
    batch_size: int = 128  # full: 64
    tenacity: int = 3  # full: 5
    epoch_size: int = 2  # full: 4
    max_epoch: int = 200
    nhid: int = 0  # >0: Linear -> Dropout -> Sigmoid -> Linear
    dropout: float = 0.0
    seed: int = 1111
    l2_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
    device: str = "auto"  # auto -> cuda if available else cpu
    # The fused CPU kernels of a linear probe (sentence_lab.evaluation.classifier.probe_kernels) where they apply;
    # false forces the torch path a GPU takes, on any device (same scores, tested against SentEval's code on both
    # paths).
    fused_kernels: bool = True
    # On a GPU, an epoch of a probe's training steps is recorded once as a CUDA graph and replayed (one launch an
    # epoch instead of ~20 a step; the same kernels: evaluation.classifier.step_graphs); false runs each step.
    cuda_graphs: bool = True
    # On a GPU, a task whose features (train and dev rows) take more than this many GB stays in host memory and
    # each step's rows are copied to the device (4096-d features of 100k probing sentences are 1.6 GB); the scores
    # do not change. 0: always (on the CPU as well, where it only tests that path).
    device_features_gb: float = 1.0
    # Several classifier seeds: every classifier task runs once per seed; results keep each seed's scores and
    # report their mean and sd (None: ``seed`` alone, SentEval's single run).
    seeds: tuple[int, ...] | None = None
    # Model selection without test data: only train/dev splits are encoded and scored (regimes.DEV_ONLY_NOTE).
    dev_only: bool = False
    # pytorch: the probes above (SentEval's usepytorch: True); sklearn: SentEval's usepytorch: False path,
    # scikit-learn's LogisticRegression over SentEval's C grids (evaluation.sklearn_regimes); relatedness
    # ignores it, as in SentEval.
    backend: str = "pytorch"
    # The probing paper's probe (evaluation=probing_paper): MLPs over nhid_grid x dropout_grid, each with every L2
    # value, trained together, the best chosen on dev (train/dev/test tasks; None: nhid and dropout as set).
    nhid_grid: tuple[int, ...] | None = None
    dropout_grid: tuple[float, ...] | None = None
    # Probing tasks only (sentence_lab.evaluation.probing.measures): a control task per task and its selectivity
    # (controls), and the online codelength of the labels (mdl). Each multiplies a probing task's classifier cost.
    controls: bool = False
    control_function: str = "first_word"  # sentence_lab.evaluation.probing.controls.FUNCTIONS
    mdl: bool = False

    def __post_init__(self) -> None:
        """Settings that would only fail once the classifiers run are rejected here, before any encoding."""
        parse_optim(self.optim)
        if self.device_features_gb < 0:
            raise ValueError(f"device_features_gb={self.device_features_gb}: use a size in GB >= 0 "
                             "(evaluation.device_features_gb=1.0; 0 keeps every task's features in host memory)")
        if self.kfold < 2:
            raise ValueError(f"kfold={self.kfold}: k-fold needs k >= 2")
        if not self.l2_grid:
            raise ValueError("l2_grid is empty: give at least one L2 value, e.g. evaluation.l2_grid=[1e-4]")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend={self.backend!r}: use one of {', '.join(BACKENDS)} (evaluation.backend=...)")
        if self.seeds is not None and not self.seeds:
            raise ValueError("evaluation.seeds is empty: give seeds, e.g. [1111,1112,1113], or null")
        if self.nhid_grid is not None and (not self.nhid_grid or min(self.nhid_grid) < 1):
            raise ValueError(f"nhid_grid={list(self.nhid_grid)}: hidden sizes >= 1, e.g. [50,100,200], or null")
        if self.control_function not in CONTROL_FUNCTIONS:
            raise ValueError(f"control_function={self.control_function!r}: use one of {', '.join(CONTROL_FUNCTIONS)}")
        if any(not 0.0 <= p < 1.0 for p in self.dropout_grid or ()):
            raise ValueError(f"dropout_grid={list(self.dropout_grid or ())}: rates in [0, 1), e.g. [0.0,0.1,0.2]")

    def classifier_seeds(self) -> tuple[int, ...]:
        return tuple(self.seeds) if self.seeds else (self.seed,)

    def probe_shapes(self) -> list[tuple[int, float]] | None:
        """The (nhid, dropout) grid of the probing paper's probe, or None for the one probe ``nhid``/``dropout``."""
        if not self.nhid_grid:
            return None
        return [(int(n), float(p)) for n in self.nhid_grid for p in (self.dropout_grid or (self.dropout,))]

    def probe_members(self, regs: list[float]) -> list[tuple[tuple[int, float] | None, float]]:
        """Every probe a stage trains, ``(shape, l2)``: each grid shape with every L2 value (shape None: the one probe
        ``nhid``/``dropout``), in the order the first best on dev is chosen."""
        shapes = self.probe_shapes()
        return [(shape, reg) for shape in shapes for reg in regs] if shapes else [(None, reg) for reg in regs]

    def member_shapes(self, members: list[tuple[tuple[int, float] | None, float]]) -> list[tuple[int, float]] | None:
        """The (nhid, dropout) of each of :meth:`probe_members`' members, as ``fit_members(hidden=...)`` takes them;
        None when they are all the one probe ``nhid``/``dropout``."""
        shapes = [shape for shape, _ in members if shape is not None]
        return shapes if shapes and len(shapes) == len(members) else None



# torch.optim defaults of the optimizers the engine implements (torch 2.x; SentEval's get_optimizer names them).
OPTIM_DEFAULTS: dict[str, dict[str, float]] = {
    "adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
    "rmsprop": {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": 0.0},
    "sgd": {"lr": float("nan"), "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": 0.0},
    "adamax": {"lr": 2e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
    "adagrad": {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10},
    "adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.0},
}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def parse_optim(spec: str) -> tuple[str, dict[str, float]]:
    """Parse SentEval's optimizer string into (method, full hyper-parameter dict).

    ``"rmsprop"`` -> ("rmsprop", torch defaults); ``"sgd,lr=0.1"`` -> lr overridden.
    The weight decay is always overwritten by the protocol's L2 value afterwards, as in SentEval.
    """
    spec = spec.strip()
    method, _, rest = spec.partition(",")
    method = method.strip().lower()
    if method not in OPTIM_DEFAULTS:
        raise ValueError(f"optimizer {method!r} not supported: use one of {sorted(OPTIM_DEFAULTS)} "
                         "(evaluation.optim=...)")
    values = dict(OPTIM_DEFAULTS[method])
    if rest:
        for item in rest.split(","):
            key, eq, val = item.partition("=")
            key, val = key.strip(), val.strip()
            if not eq or _NUMBER.match(val) is None:
                raise ValueError(f"bad optimizer parameter {item!r} in {spec!r}")
            if key not in values:
                raise ValueError(f"unexpected parameter {key!r} for {method}: expected {sorted(values)}")
            values[key] = float(val)
    if method == "sgd" and values["lr"] != values["lr"]:
        raise ValueError("sgd needs an explicit lr, as in SentEval: 'sgd,lr=0.1'")
    if method == "sgd" and values["nesterov"] and (values["momentum"] <= 0 or values["dampening"] != 0):
        raise ValueError(f"{spec!r}: nesterov needs momentum > 0 and dampening 0 (as torch.optim.SGD)")
    return method, values


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


PROTOTYPE = ProtocolParams()
FULL = ProtocolParams(name="full", kfold=10, optim="adam", batch_size=64, tenacity=5, epoch_size=4)
