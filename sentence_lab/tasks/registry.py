"""Every task, declared as data: name, family, loader, regime, features, metrics and main score."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from sentence_lab.tasks import binary, mrpc, probing, sick, snli, sst, sts, trec
from sentence_lab.tasks.base import TaskData

Family = Literal["transfer", "relatedness", "similarity", "probing"]
# SentEval's evaluation regimes: each is the module of the same name under sentence_lab/evaluation/regimes/
Regime = Literal["nested", "kfold", "split", "regression", "cosine"]
FAMILIES: tuple[str, ...] = get_args(Family)
REGIME_NAMES: tuple[str, ...] = get_args(Regime)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    family: Family  # also the family of its logged scores: similarity/STS14, probing/Length
    loader: Callable[..., TaskData]  # data_dir -> TaskData
    regime: Regime
    metrics: tuple[str, ...]  # SentEval's result keys worth showing
    main_score: str  # dotted path into the result, e.g. "acc" or "all.pearson.mean"
    features: str | None = None  # pair features: absdiff_prod | snli; None for single sentences
    params_override: Mapping[str, object] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"task {self.name}: family {self.family!r} is not one of {FAMILIES}")
        if self.regime not in REGIME_NAMES:
            raise ValueError(f"task {self.name}: regime {self.regime!r} is not one of {REGIME_NAMES}")


_ACC = ("devacc", "acc")
_REL = ("devpearson", "pearson", "spearman", "mse")
_COS = ("test.pearson", "test.spearman")
_STS = ("all.pearson.mean", "all.pearson.wmean", "all.spearman.mean", "all.spearman.wmean", "pooled.spearman")

_TABLE = [
    TaskSpec("MR", "transfer", binary.load_mr, "nested", _ACC, "acc"),
    TaskSpec("CR", "transfer", binary.load_cr, "nested", _ACC, "acc"),
    TaskSpec("SUBJ", "transfer", binary.load_subj, "nested", _ACC, "acc"),
    TaskSpec("MPQA", "transfer", binary.load_mpqa, "nested", _ACC, "acc"),
    TaskSpec("SST2", "transfer", sst.load_sst2, "split", _ACC, "acc"),
    TaskSpec("SST5", "transfer", sst.load_sst5, "split", _ACC, "acc"),
    TaskSpec("TREC", "transfer", trec.load_trec, "kfold", _ACC, "acc"),
    TaskSpec("MRPC", "transfer", mrpc.load_mrpc, "kfold", _ACC + ("f1",), "acc", features="absdiff_prod"),
    TaskSpec("SICKEntailment", "transfer", sick.load_sick_entailment, "split", _ACC, "acc",
             features="absdiff_prod"),
    # SentEval's snli.py: noreg (one L2 value, 1e-9), and the classifier's max_epoch 15 and epoch_size 1
    TaskSpec("SNLI", "transfer", snli.load_snli, "split", _ACC, "acc", features="snli",
             params_override=MappingProxyType({"l2_grid": (1e-9,), "max_epoch": 15, "epoch_size": 1}),
             note="no L2 search (SentEval's noreg); max_epoch 15, epoch_size 1 (SentEval's snli.py)"),
    TaskSpec("SICKRelatedness", "relatedness", sick.load_sick_relatedness, "regression", _REL, "pearson",
             features="absdiff_prod"),
    TaskSpec("STSBenchmark", "relatedness", sts.load_sts_benchmark, "regression", _REL, "pearson",
             features="absdiff_prod"),
    *[TaskSpec(name, "similarity", getattr(sts, f"load_{name.lower()}"), "cosine", _STS, "all.pearson.mean")
      for name in ("STS12", "STS13", "STS14", "STS15", "STS16")],
    # SimCSE's protocol (Gao et al. 2021, appendix B): cosine on the test split, Spearman, no regressor
    TaskSpec("STSBenchmarkCosine", "similarity", sts.load_sts_benchmark_cosine, "cosine", _COS, "test.spearman",
             note="cosine, no trained regressor (SimCSE protocol)"),
    TaskSpec("SICKRelatednessCosine", "similarity", sick.load_sick_relatedness_cosine, "cosine", _COS,
             "test.spearman", note="cosine, no trained regressor (SimCSE protocol)"),
    *[TaskSpec(name, "probing", probing.LOADERS[name], "split", _ACC, "acc",
               params_override=MappingProxyType({"nhid": 0, "nhid_grid": None}) if name == "WordContent"
               else MappingProxyType({}),
               note="nhid forced to 0 (SentEval): a logistic probe, also under the MLP grid" if name == "WordContent"
               else "")
      for name in probing.PROBING_FILES],
]

TASKS: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in _TABLE})

GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "transfer": tuple(s.name for s in _TABLE if s.family in ("transfer", "relatedness")),
    "sts": ("STS12", "STS13", "STS14", "STS15", "STS16") + tuple(s.name for s in _TABLE if s.family == "relatedness"),
    "relatedness": tuple(s.name for s in _TABLE if s.family == "relatedness"),
    "similarity": ("STS12", "STS13", "STS14", "STS15", "STS16"),
    # SimCSE's STS protocol: STS12-16 (headline: pooled.spearman, their "all"), STS-B and SICK-R by cosine
    "sts_cosine": ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmarkCosine", "SICKRelatednessCosine"),
    "probing": tuple(s.name for s in _TABLE if s.family == "probing"),
    "all": tuple(s.name for s in _TABLE if not s.name.endswith("Cosine")),  # SentEval's tasks
})


class UnknownTask(ValueError):
    pass


def valid_names_message() -> str:
    return f"tasks: {', '.join(TASKS)}; groups: {', '.join(GROUPS)}"


def resolve_tasks(names) -> list[str]:
    """Task and group names (any case; a comma-separated string or a list) -> task names, in order, no repeats."""
    if isinstance(names, str):
        names = [n for n in names.replace("[", "").replace("]", "").split(",")]
    lookup = {n.lower(): n for n in TASKS}
    out: list[str] = []
    for raw in names:
        name = str(raw).strip()
        if not name:
            continue
        if name.lower() in GROUPS:
            expanded = GROUPS[name.lower()]
        elif name.lower() in lookup:
            expanded = (lookup[name.lower()],)
        else:
            raise UnknownTask(f"unknown task {name!r}: valid {valid_names_message()}")
        out.extend(t for t in expanded if t not in out)
    if not out:
        raise UnknownTask(f"no task given: valid {valid_names_message()}")
    return out


def get_path(result: dict, dotted: str):
    value = result
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
