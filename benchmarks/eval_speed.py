"""Time the SentEval suite: encoding vs classifier seconds per task, both parameter sets; and, with ``--high-dim``,
the probes of a 4096-d encoder alone against this CPU's roofline.

    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py                       # all tasks, both sets
    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py --tasks MR,STS14 --params prototype
    python benchmarks/eval_speed.py --encoders bow_glove --out-dir /tmp/eval_speed
    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py --high-dim --params prototype \
        [--reference /tmp/senteval_ref] [--tasks MR,TREC]      # the probes of a 4096-d encoder alone
    python benchmarks/eval_speed.py --smoke [--high-dim]       # either, on a tiny generated SentEval tree

Encoders: ``bow_glove`` and an untrained 4096-d ``bilstm_max`` (encoder.hidden_dim=2048). Each
(encoder, parameter set) runs ``evaluate.py`` in a subprocess and the per-task timings are read
back from its results JSON (``encode_seconds`` is time inside the encoder, ``classifier_seconds``
the rest: features, classifiers, correlations). The timings go to a JSON record (``--output``, default
``logs/benchmarks/eval_speed/<time>.json``); ``--out-dir`` keeps evaluate.py's own results files.

``--high-dim`` times the classifiers of a 4096-d encoder whose encoding costs nothing: a fixed random projection
of ``bow_glove`` (50 -> 4096, Gaussian, seed 0), so the classifiers are timed alone, on the features SentEval would
give them (pair tasks get ``[|u - v|, u * v]``: 8192-d). Per task it prints

* the classifier seconds of our engine (the regime call on ready features);
* what the probes moved and computed, from the engine's counters: every gathered training row and every
  scored dev row read once (``(d + 1) * 4`` bytes), the optimiser reading and writing parameters, gradient
  and state once per step; FLOPs of the forward and backward products and of the optimiser;
* the share of this CPU's roofline: ``max(bytes / bandwidth, FLOPs / matmul peak) / seconds``, with the
  bandwidth (streaming read of 1 GB) and the peak (a 2048^3 float32 matmul) measured here, at the same
  thread count; and the same share against the bandwidth of reading random 16 KB rows (the probes' access
  pattern: one MR step's 25 x 128 rows summed, no other work), which is what minibatches can reach;
* the seconds torch's BLAS spends on the same training products at each fit's shape (``[columns, d + 1]`` by
  ``[d + 1, batch]`` forward and backward, rows already gathered): skinny products run far below the square
  matmul peak, so this is what a library reaches on them;
* the classifier time as a share of a 4096-d BiLSTM-max's encoding of the task (untrained
  ``encoder=bilstm_max encoder.hidden_dim=2048``, GloVe input; its sentences/s measured on a random sample
  of each task's sentences and extrapolated to the task's distinct sentences);
* with ``--reference DIR`` (a folder holding SentEval's ``senteval`` package, patched to run on a CPU as
  ``benchmarks/compare_senteval.py`` describes), SentEval's own classifier code on the same features:
  seconds, speed-up and scores.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np
import torch

from lib import engine_timing, records, reference_code, smoke_inputs

ROOT = Path(__file__).resolve().parent.parent
ENCODERS = {
    "bow_glove": ["encoder=bow_glove"],
    "bilstm_max_4096": ["encoder=bilstm_max", "encoder.hidden_dim=2048"],
}
SMOKE_TASKS = "MR,TREC,SST2,STS12"  # nested CV, k-fold then test, train/dev/test, cosine (relatedness: seconds alone)


# ---- the suite through evaluate.py --------------------------------------------------------------------------------

def run_one(encoder: str, params: str, tasks: str, out_dir: Path, env: dict | None = None,
            extra: tuple[str, ...] = ()) -> dict:
    results = out_dir / f"{encoder}_{params}.json"
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *ENCODERS[encoder], f"evaluation={params}",
           f"tasks=[{tasks}]", f"results_file={results}", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if not results.is_file():
        raise SystemExit(f"{encoder}/{params} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    doc = json.loads(results.read_text())
    doc["wall_seconds"] = wall
    return doc


def report(encoder: str, params: str, doc: dict) -> dict:
    """Print one (encoder, parameter set)'s table; return its figures for the record."""
    print(f"\n## {encoder}, evaluation={params}: wall {doc['wall_seconds']:.1f}s, "
          f"{doc.get('sentences_encoded', '?')} distinct sentences encoded in {doc.get('encode_seconds', 0):.1f}s")
    print("| task | encode s | classifier s | total s | main score |")
    print("|---|---|---|---|---|")
    tot = [0.0, 0.0, 0.0]
    tasks = {}
    for task, r in doc["results"].items():
        score = r.get("main_score")
        print(f"| {task} | {r['encode_seconds']:.1f} | {r['classifier_seconds']:.1f} | {r['seconds']:.1f} | "
              f"{'n/a' if score is None else round(score, 4)} |")
        tot = [tot[0] + r["encode_seconds"], tot[1] + r["classifier_seconds"], tot[2] + r["seconds"]]
        tasks[task] = {k: r.get(k) for k in ("encode_seconds", "classifier_seconds", "seconds", "main_metric",
                                             "main_score")}
    print(f"| **sum** | {tot[0]:.1f} | {tot[1]:.1f} | {tot[2]:.1f} | |")
    problems = {**doc.get("skipped", {}), **doc.get("errors", {})}
    for task, message in problems.items():
        print(f"  {task}: {message}")
    return {"encoder": encoder, "params": params, "wall_seconds": doc["wall_seconds"],
            "sentences_encoded": doc.get("sentences_encoded"), "encode_seconds": doc.get("encode_seconds"),
            "sum": dict(zip(("encode_seconds", "classifier_seconds", "seconds"), tot)), "tasks": tasks,
            "skipped_or_failed": problems}


# ---- --high-dim: the probes of a 4096-d encoder alone --------------------------------------------------------------

STATE_TENSORS = {"adam": 2, "adamax": 2, "rmsprop": 1, "sgd": 1, "adagrad": 1, "adadelta": 2}
DEFAULT_TASKS = "MR,CR,SUBJ,MPQA,SST2,SST5,TREC,MRPC,SICKEntailment,SICKRelatedness,STSBenchmark"


def machine_peaks(seconds: float = 1.0, floats: int = 1 << 28, matmul: int = 2048) -> dict:
    """Streaming read bandwidth and random-row read bandwidth (bytes/s), float32 matmul peak (FLOP/s), best of
    repeated runs, with torch's and numba's thread count (``floats``: the streamed array, 1 GiB by default;
    ``matmul``: the square product's side)."""
    from sentence_lab.evaluation.classifier.probe_kernels import sync_threads

    sync_threads()

    def best(fn, work):
        fn()
        rates, t_end = [], time.perf_counter() + seconds
        while time.perf_counter() < t_end or len(rates) < 3:
            t0 = time.perf_counter()
            fn()
            rates.append(work / (time.perf_counter() - t0))
        return max(rates)

    a = torch.rand(floats)  # 1 GiB by default
    bandwidth = best(a.sum, a.numel() * 4)
    n = a.numel() // 4097
    rows = a[: n * 4097].view(n, 4097).numpy()  # 65k rows of a 4096-d encoder's features (with the ones column)
    idx = np.random.RandomState(0).randint(0, len(rows), (25, 128))  # one MR step: 25 groups x 128 rows
    out = np.zeros(25, dtype=np.float32)
    random_rows = best(lambda rows=rows: _sum_rows(rows, idx, out), idx.size * 4097 * 4)
    del a, rows
    A, B = torch.rand(matmul, matmul), torch.rand(matmul, matmul)
    return {"read_bandwidth": bandwidth, "random_row_bandwidth": random_rows,
            "matmul_peak": best(lambda: A @ B, 2 * matmul**3), "threads": torch.get_num_threads()}


@numba.njit(parallel=True, fastmath=True, boundscheck=False, cache=True)
def _sum_rows(X, idx, out):
    """Read every row ``X[idx[g, r]]`` once (their sum per group): the probes' access pattern, no arithmetic."""
    for g in numba.prange(idx.shape[0]):
        acc = np.float32(0)
        for r in range(idx.shape[1]):
            x = X[idx[g, r]]
            for k in range(x.shape[0]):
                acc += x[k]
        out[g] = acc


def probe_cost(works: list[dict]) -> tuple[float, float]:
    """(bytes, FLOPs) of the engine's fits: each row read once, products (the columns the engine computes: the
    fused kernel's binary probes compute one per member; members that stopped in every group are not computed),
    optimiser passes."""
    nbytes = flops = 0.0
    for w in works:
        d1, C, h = w["d"] + 1, w["nclasses"], w["nhid"]
        nbytes += (w["rows"] + w["dev_rows"]) * d1 * 4
        flops += _train_flops(w) + 2 * d1 * (h or C) * w["dev_member_rows"]
        if h:
            flops += 2 * (h + 1) * C * (3 * w["member_rows"] + w["dev_member_rows"])
        params = h * d1 + C * (h + 1) if h else C * d1  # per member
        member_steps = w["member_rows"] / w["batch_size"]
        nbytes += member_steps * params * 4 * (3 + 2 * STATE_TENSORS[w["optim"]])
        flops += member_steps * params * 12
    return nbytes, flops


def _train_flops(w: dict) -> float:
    """FLOPs of a fit's forward and backward products on its training rows (first layer)."""
    return 4 * (w["d"] + 1) * w["train_columns"] / w["members"] * w["member_rows"]


_SHAPE_RATES: dict[tuple[int, int, int], float] = {}


def shape_rate(columns: int, width: int, batch: int, seconds: float = 0.5) -> float:
    """FLOP/s of torch's BLAS on a training step's products at this shape: forward ``W [columns, width] @ Xb^T``
    and backward ``dZ [columns, batch] @ Xb [batch, width]``, one batch per thread (best of repeated runs).
    Skinny products run well below the square-matmul peak: a reference for what a library reaches on them."""
    key = (columns, width, batch)
    if key not in _SHAPE_RATES:
        G = torch.get_num_threads()
        W, Xb, dZ = torch.rand(G, columns, width), torch.rand(G, batch, width), torch.rand(G, columns, batch)
        out = torch.empty(G, columns, width)
        step = lambda: (torch.bmm(W, Xb.transpose(1, 2)), torch.bmm(dZ, Xb, out=out))  # noqa: E731
        step()
        best, t_end = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            t0 = time.perf_counter()
            step()
            best = max(best, 4 * G * columns * width * batch / (time.perf_counter() - t0))
        _SHAPE_RATES[key] = best
    return _SHAPE_RATES[key]


def compute_seconds_at_shape(works: list[dict], flops: float, peak: float, seconds: float = 0.5) -> float:
    """Seconds of the fits' ``flops`` with the training products at BLAS's rate for each fit's shape (each shape
    timed for ``seconds``), the rest at ``peak``."""
    train = [_train_flops(w) for w in works]
    at_shape = sum(f / shape_rate(w["train_columns"], w["d"] + 1, w["batch_size"], seconds)
                   for f, w in zip(train, works))
    return at_shape + (flops - sum(train)) / peak


def run_senteval(spec, X: dict, y: dict, params, nclasses: int | None) -> dict:
    """SentEval's validation / relatedness classes (imported from ``--reference``) on the same features."""
    from sentence_lab.evaluation.regimes import tai_target
    from senteval.tools.relatedness import RelatednessPytorch
    from senteval.tools.validation import InnerKFoldClassifier, KFoldClassifier, SplitClassifier

    config = {"nclasses": nclasses or 5, "seed": params.seed, "usepytorch": True, "kfold": params.kfold,
              "classifier": {"nhid": params.nhid, "optim": params.optim, "batch_size": params.batch_size,
                             "tenacity": params.tenacity, "epoch_size": params.epoch_size,
                             "max_epoch": params.max_epoch, "dropout": params.dropout}}
    if spec.regime == "nested":
        dev, test = InnerKFoldClassifier(X["all"], y["all"], config).run()
    elif spec.regime == "kfold":
        dev, test, _ = KFoldClassifier({"X": X["train"], "y": y["train"]}, {"X": X["test"], "y": y["test"]},
                                       config).run()
    elif spec.regime == "split":
        dev, test = SplitClassifier({"train": X["train"], "valid": X["dev"], "test": X["test"]},
                                    {"train": y["train"], "valid": y["dev"], "test": y["test"]}, config).run()
    else:
        from scipy.stats import pearsonr

        splits = [{"X": X[k], "y": tai_target(y[k])} for k in ("train", "dev", "test")]
        dev, yhat = RelatednessPytorch(*splits, list(y["dev"]), {"seed": params.seed, "nclasses": 5}).run()
        return {"devpearson": float(dev), "pearson": float(pearsonr(yhat, y["test"])[0])}
    return {"devacc": float(dev), "acc": float(test)}


def bilstm_rate(loaded, sample: int, hidden_dim: int = 2048) -> tuple[object, dict]:
    """The untrained 4096-d BiLSTM-max (``2 * hidden_dim``) and its sentences/s on ``sample`` random sentences of
    each task."""
    from hydra import compose, initialize_config_dir

    from sentence_lab.adapters.from_config import build_text_encoder
    from sentence_lab.evaluation.encoders.text_encoders import TextEncoder
    from sentence_lab.evaluation.runner import all_sentences

    with initialize_config_dir(str(ROOT / "conf"), version_base=None):
        cfg = compose("evaluate", overrides=["encoder=bilstm_max", f"encoder.hidden_dim={hidden_dim}"])
    encoder, _ = build_text_encoder(cfg, lambda: all_sentences(loaded))
    assert isinstance(encoder, TextEncoder)  # an untrained model: encode and describe
    rates = {}
    for task in loaded:
        sentences = sorted(set(task.data.sentences()))
        pick = np.random.RandomState(0).choice(len(sentences), min(sample, len(sentences)), replace=False)
        batch = sorted((sentences[i] for i in pick), key=lambda s: len(s.split()))  # length-sorted, as the cache
        t0 = time.perf_counter()
        for i in range(0, len(batch), 128):
            encoder.encode(batch[i : i + 128])
        rates[task.spec.name] = len(batch) / (time.perf_counter() - t0)
    return encoder, rates



def high_dim(tasks: str, params_name: str, data: Path, reference: str | None, sample: int, out: Path | None,
             smoke: bool = False) -> dict:
    """Print the table of the module docstring for one parameter set; write it to ``out`` if given; return it.
    ``smoke``: the machine's peaks and the BLAS shapes measured briefly, on small arrays; 256-d features and
    BiLSTM-max."""
    import sentence_lab.evaluation.classifier as engine
    from sentence_lab.evaluation.protocol import FULL, PROTOTYPE
    from sentence_lab.evaluation.regimes import MODULES
    from sentence_lab.evaluation.runner import load_tasks
    from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

    params = {"prototype": PROTOTYPE, "full": FULL}[params_name]
    if reference:
        reference_code.use_senteval_checkout(reference)
        import logging

        logging.disable(logging.INFO)
    peak_options: dict[str, Any] = {"seconds": 0.05, "floats": 1 << 22, "matmul": 256} if smoke else {}
    shape_seconds = 0.02 if smoke else 0.5
    peaks = machine_peaks(**peak_options)
    print(f"machine at the start: streaming read {peaks['read_bandwidth'] / 1e9:.1f} GB/s, random 16 KB rows "
          f"{peaks['random_row_bandwidth'] / 1e9:.1f} GB/s, float32 matmul "
          f"{peaks['matmul_peak'] / 1e9:.0f} GFLOP/s, torch threads {peaks['threads']}", flush=True)
    loaded = [t for t in load_tasks(tasks.split(","), data) if t.data is not None and t.spec.regime != "cosine"]
    _, rates = bilstm_rate(loaded, sample, 128 if smoke else 2048) if sample else (None, {})

    works: list[dict] = []
    fit = engine.fit_members

    def recording_fit(*args, **kwargs):
        res = fit(*args, **kwargs)
        works.append(res.work)
        return res

    for module in MODULES.values():  # every regime module's fit_members records its work
        if hasattr(module, "fit_members"):
            setattr(module, "fit_members", recording_fit)  # noqa: B010 - a module's global: ModuleType declares none
    projection = EmbeddingCache(engine_timing.ProjectedBow(256 if smoke else 4096), batch_size=128)
    rows = []
    print("\n| task | d | classifier s | GB moved | GFLOP | roofline s | roofline share | share, random rows | "
          "BLAS on the same products s | 4096-d BiLSTM-max "
          "encode s (est.) | classifiers / encoding | SentEval s | speed-up | score ours / SentEval |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for task in loaded:
        spec, task_data = task.spec, task.data
        assert task_data is not None  # the tasks that did not load were left out of `loaded`
        X, y = engine_timing.task_features(task, projection.embed)
        works.clear()
        t0 = time.perf_counter()
        ours = engine_timing.run_regime(spec, X, y, params, task_data.nclasses)
        seconds = time.perf_counter() - t0
        nbytes, flops = probe_cost(works)
        roof = max(nbytes / peaks["read_bandwidth"], flops / peaks["matmul_peak"])
        roof_rows = max(nbytes / peaks["random_row_bandwidth"], flops / peaks["matmul_peak"])
        blas = compute_seconds_at_shape(works, flops, peaks["matmul_peak"], shape_seconds)
        n_sentences = len(set(task_data.sentences()))
        encode = n_sentences / rates[spec.name] if spec.name in rates else None
        ref, ref_seconds = None, None
        if reference:
            t0 = time.perf_counter()
            ref = run_senteval(spec, X, y, params, task_data.nclasses)
            ref_seconds = time.perf_counter() - t0
        key = "acc" if "acc" in ours else "pearson"
        row = {"task": spec.name, "d": next(iter(X.values())).shape[1], "classifier_seconds": seconds,
               "bytes": nbytes, "flops": flops, "roofline_seconds": roof, "roofline_share": roof / seconds,
               "random_row_roofline_seconds": roof_rows, "blas_at_shape_seconds": blas,
               "bilstm_encode_seconds": encode, "sentences": n_sentences, "senteval_seconds": ref_seconds,
               "ours": {k: v for k, v in ours.items() if k != "yhat"}, "senteval": ref,
               "steps": sum(w["steps"] for w in works)}
        rows.append(row)
        print(f"| {spec.name} | {row['d']} | {seconds:.1f} | {nbytes / 1e9:.1f} | {flops / 1e9:.0f} | {roof:.1f} | "
              f"{roof / seconds:.0%} | {roof_rows / seconds:.0%} | {blas:.1f} | "
              f"{'n/a' if encode is None else f'{encode:.0f}'} | "
              f"{'n/a' if encode is None else f'{seconds / encode:.1%}'} | "
              f"{'n/a' if ref_seconds is None else f'{ref_seconds:.1f}'} | "
              f"{'n/a' if ref_seconds is None else f'{ref_seconds / seconds:.1f}x'} | "
              f"{ours[key]:.4g} / {'n/a' if ref is None else f'{ref[key]:.4g}'} |", flush=True)
        del X
        projection = EmbeddingCache(projection.encoder, batch_size=128)  # bound memory: no reuse across tasks
        gc.collect()
    end = machine_peaks(**peak_options)  # the machine is shared: both readings go to the JSON
    print(f"\nmachine at the end: streaming read {end['read_bandwidth'] / 1e9:.1f} GB/s, random 16 KB rows "
          f"{end['random_row_bandwidth'] / 1e9:.1f} GB/s, float32 matmul "
          f"{end['matmul_peak'] / 1e9:.0f} GFLOP/s")
    if max(end["read_bandwidth"] / peaks["read_bandwidth"], end["matmul_peak"] / peaks["matmul_peak"]) > 1.1:
        print("note: the machine was slower at the start; the roofline shares above use the start's figures")
    total = sum(r["classifier_seconds"] for r in rows)
    enc = sum(r["bilstm_encode_seconds"] or 0 for r in rows)
    ref_total = sum(r["senteval_seconds"] or 0 for r in rows)
    roof_rows = sum(r["random_row_roofline_seconds"] for r in rows)
    blas = sum(r["blas_at_shape_seconds"] for r in rows)
    print(f"\ntotal: classifiers {total:.1f} s, roofline {sum(r['roofline_seconds'] for r in rows):.1f} s "
          f"({sum(r['roofline_seconds'] for r in rows) / total:.0%}; random rows {roof_rows:.1f} s, "
          f"{roof_rows / total:.0%}; BLAS on the products alone {blas:.1f} s), BiLSTM-max encoding (est.) {enc:.0f} s "
          f"({total / enc:.1%})" if enc else f"\ntotal: classifiers {total:.1f} s", end="")
    print(f", SentEval {ref_total:.1f} s ({ref_total / total:.1f}x)" if ref_total else "")
    doc = {"params": params_name, "machine": {"start": peaks, "end": end}, "tasks": rows}
    if out:
        out.write_text(json.dumps(doc, indent=1))
        print(f"results JSON: {out}")
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="all", help="comma-separated tasks or groups (default: all)")
    ap.add_argument("--params", default="prototype,full", help="parameter sets (default: prototype,full)")
    ap.add_argument("--encoders", default=",".join(ENCODERS), help=f"subset of {list(ENCODERS)}")
    ap.add_argument("--out-dir", default=None, help="where the results JSON files go (default: a temporary folder)")
    ap.add_argument("--high-dim", action="store_true", help="time the probes of a 4096-d encoder alone")
    ap.add_argument("--reference", default=None, help="--high-dim: folder with SentEval's senteval/ package")
    ap.add_argument("--encode-sample", type=int, default=256,
                    help="--high-dim: sentences per task to time the 4096-d BiLSTM-max on (0: skip)")
    records.add_options(ap, f"bow_glove, prototype, tasks {SMOKE_TASKS} of a tiny generated SentEval tree "
                              "(with --high-dim: the probes of a 256-d projection on it, the machine's peaks "
                              "measured briefly)")
    args = ap.parse_args(argv)
    run = records.start("eval_speed", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="eval_speed_smoke_") as tmp:
        data, env = Path(os.environ.get("SENTENCE_DATA") or ROOT / "data"), None
        extra: tuple[str, ...] = ()
        if args.smoke:
            data = smoke_inputs.tiny_senteval(Path(tmp) / "data")
            env = dict(os.environ, SENTENCE_DATA=str(data))
            extra = (f"hydra.run.dir={Path(tmp) / 'evaluate'}",)
            args.tasks = SMOKE_TASKS if args.tasks == "all" else args.tasks
            args.params, args.encoders = "prototype", "bow_glove"
            args.encode_sample = min(args.encode_sample, 8)
        if args.high_dim:
            out = None
            if args.out_dir:
                Path(args.out_dir).mkdir(parents=True, exist_ok=True)
                out = Path(args.out_dir) / "high_dim.json"
            docs = [high_dim(DEFAULT_TASKS if args.tasks == "all" else args.tasks, params, data, args.reference,
                             args.encode_sample, out, args.smoke) for params in args.params.split(",")]
            run.write({"high_dim": docs}, libraries=("numba",), data=str(data))
            return 0
        if not os.environ.get("SENTENCE_DATA") and not args.smoke:
            print("note: SENTENCE_DATA is unset; evaluate.py falls back to <project>/data", file=sys.stderr)
        out_dir = Path(args.out_dir or (Path(tmp) / "results" if args.smoke
                                        else tempfile.mkdtemp(prefix="eval_speed_")))
        out_dir.mkdir(parents=True, exist_ok=True)
        runs = [report(encoder, params, run_one(encoder, params, args.tasks, out_dir, env, extra))
                for encoder in args.encoders.split(",") for params in args.params.split(",")]
        print(f"\nresults JSON: {out_dir}")
        run.write({"suite": runs}, data=str(data), results_dir=str(out_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
