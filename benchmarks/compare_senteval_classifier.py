"""Compare our batched classifier engine with SentEval's own classifier code.

The reference is a local copy of SentEval's ``senteval/tools/{classifier,validation,relatedness}.py``
and ``senteval/utils.py`` (patched only to run on a CPU-only modern PyTorch), laid out as
``<reference>/senteval/...``; it is never part of this repository. Both run on the same
features: GloVe 6B-50d mean-of-words sentence vectors, in SentEval's (length, label) order.

    python benchmarks/compare_senteval_classifier.py --reference /tmp/senteval_ref \
        --task MR --protocol prototype
    python benchmarks/compare_senteval_classifier.py --reference /tmp/senteval_ref \
        --task MR --protocol full --subsample 1500
    python benchmarks/compare_senteval_classifier.py --reference /tmp/senteval_ref --task SST2

Prints each side's accuracy and seconds and the speed ratio; asserts nothing about timings.
"""
from __future__ import annotations

import argparse
import io
import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sentence_lab.evaluation.protocol import FULL, PROTOTYPE, ProtocolParams  # noqa: E402
from sentence_lab.evaluation.regimes import nested_cv, relatedness, tai_target, train_dev_test  # noqa: E402

DATA = Path("/work/shared/data/senteval")


def load_mr():
    samples, labels = [], []
    for name, lab in (("rt-polarity.pos", 1), ("rt-polarity.neg", 0)):
        with io.open(DATA / "MR" / name, "r", encoding="latin-1") as f:
            for line in f.read().splitlines():
                samples.append(line.split())
                labels.append(lab)
    return samples, labels


def load_sst2(split):
    samples, labels = [], []
    with io.open(DATA / "SST" / "binary" / f"sentiment-{split}", "r", encoding="utf-8") as f:
        for line in f:
            text, lab = line.strip().rsplit("\t", 1) if "\t" in line else line.strip().rsplit(" ", 1)
            samples.append(text.split())
            labels.append(int(lab))
    return samples, labels


def sort_like_senteval(samples, labels):
    pairs = sorted(zip(samples, labels), key=lambda z: (len(z[0]), z[1]))
    return [s for s, _ in pairs], np.array([l for _, l in pairs])


def glove_bow(samples):
    from sentence_lab.text.glove import load_glove

    index, vectors = load_glove()
    out = np.zeros((len(samples), vectors.shape[1]), dtype=np.float32)
    for i, words in enumerate(samples):
        rows = [index[w] for w in (x.lower() for x in words) if w in index]
        if rows:
            out[i] = vectors[rows].mean(0)
    return out


def senteval_config(p: ProtocolParams, nclasses: int) -> dict:
    return {
        "nclasses": nclasses, "seed": p.seed, "usepytorch": True, "kfold": p.kfold,
        "classifier": {"nhid": p.nhid, "optim": p.optim, "batch_size": p.batch_size,
                       "tenacity": p.tenacity, "epoch_size": p.epoch_size, "max_epoch": p.max_epoch,
                       "dropout": p.dropout},
    }


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def report(name, ours, ref, t_ours, t_ref, keys):
    print(f"\n== {name}")
    print("  ours      : " + "  ".join(f"{k}={ours[k]}" for k in keys) + f"   {t_ours:8.2f} s")
    print("  SentEval  : " + "  ".join(f"{k}={ref[k]}" for k in keys) + f"   {t_ref:8.2f} s")
    same = all(ours[k] == ref[k] for k in keys)
    print(f"  identical : {same}   speed-up: {t_ref / max(t_ours, 1e-9):.1f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", required=True, help="directory holding senteval/tools/*.py")
    ap.add_argument("--task", choices=["MR", "SST2", "relatedness-synthetic"], default="MR")
    ap.add_argument("--protocol", choices=["prototype", "full"], default="prototype")
    ap.add_argument("--subsample", type=int, default=0, help="use this many examples (0 = all)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for both sides")
    ap.add_argument("--skip-reference", action="store_true", help="only time our engine")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    logging.disable(logging.INFO)
    sys.path.insert(0, str(Path(args.reference).resolve()))
    import warnings

    warnings.filterwarnings("ignore")
    from senteval.tools.relatedness import RelatednessPytorch
    from senteval.tools.validation import InnerKFoldClassifier, SplitClassifier

    p = PROTOTYPE if args.protocol == "prototype" else FULL
    rs = np.random.RandomState(0)
    print(f"protocol={p.name} ({p.kfold}-fold, {p.optim}, batch {p.batch_size}, tenacity {p.tenacity}, "
          f"epoch_size {p.epoch_size}), torch threads={args.threads}, device={p.device}")

    if args.task == "MR":
        samples, labels = load_mr()
        if args.subsample:
            keep = np.sort(rs.choice(len(samples), args.subsample, replace=False))
            samples, labels = [samples[i] for i in keep], [labels[i] for i in keep]
        samples, y = sort_like_senteval(samples, labels)
        X = glove_bow(samples)
        print(f"MR: {len(y)} sentences, features {X.shape[1]}-d GloVe mean")
        ours, t_ours = timed(lambda: nested_cv(X, y, p, 2))
        if args.skip_reference:
            print(f"ours: {ours}  {t_ours:.2f} s")
            return
        (dev, test), t_ref = timed(lambda: InnerKFoldClassifier(X, y, senteval_config(p, 2)).run())
        report("MR nested CV", ours, {"devacc": float(dev), "acc": float(test)}, t_ours, t_ref, ["devacc", "acc"])

    elif args.task == "SST2":
        data = {}
        for split in ("train", "dev", "test"):
            s, l = load_sst2(split)
            if args.subsample and split == "train":
                keep = np.sort(rs.choice(len(s), min(args.subsample, len(s)), replace=False))
                s, l = [s[i] for i in keep], [l[i] for i in keep]
            s, y = sort_like_senteval(s, l)
            data[split] = (glove_bow(s), y)
        print("SST-2: " + ", ".join(f"{k} {len(v[1])}" for k, v in data.items()))
        (Xtr, ytr), (Xdv, ydv), (Xte, yte) = data["train"], data["dev"], data["test"]
        ours, t_ours = timed(lambda: train_dev_test(Xtr, ytr, Xdv, ydv, Xte, yte, p, 2))
        if args.skip_reference:
            print(f"ours: {ours}  {t_ours:.2f} s")
            return
        clf = SplitClassifier({"train": Xtr, "valid": Xdv, "test": Xte}, {"train": ytr, "valid": ydv, "test": yte},
                              senteval_config(p, 2))
        (dev, test), t_ref = timed(clf.run)
        report("SST-2 train/dev/test", ours, {"devacc": float(dev), "acc": float(test)}, t_ours, t_ref,
               ["devacc", "acc"])

    else:  # synthetic relatedness: pair features of random vectors, score from a hidden projection
        n, d = args.subsample or 1500, 50
        A, Bv = rs.randn(n, d).astype(np.float32), rs.randn(n, d).astype(np.float32)
        F = np.c_[np.abs(A - Bv), A * Bv].astype(np.float32)
        score = np.clip(3 + np.tanh(F @ rs.randn(2 * d) / 6) * 2 + 0.3 * rs.randn(n), 1, 5)
        a, b = int(0.7 * n), int(0.85 * n)
        parts = [(F[:a], score[:a]), (F[a:b], score[a:b]), (F[b:], score[b:])]
        ours, t_ours = timed(lambda: relatedness(*parts[0], *parts[1], *parts[2], p))
        from scipy.stats import pearsonr

        def ref_run():
            clf = RelatednessPytorch({"X": parts[0][0], "y": tai_target(parts[0][1])},
                                     {"X": parts[1][0], "y": tai_target(parts[1][1])},
                                     {"X": parts[2][0], "y": tai_target(parts[2][1])},
                                     list(parts[1][1]), {"seed": p.seed, "nclasses": 5})
            devpr, yhat = clf.run()
            return {"devpearson": devpr, "pearson": pearsonr(yhat, parts[2][1])[0], "yhat": yhat}

        ref, t_ref = timed(ref_run)
        print(f"max |yhat ours - yhat SentEval| = {np.abs(ours['yhat'] - ref['yhat']).max():.2e}")
        ours = {k: round(float(ours[k]), 6) for k in ("devpearson", "pearson")}
        ref = {k: round(float(ref[k]), 6) for k in ("devpearson", "pearson")}
        report("relatedness (synthetic)", ours, ref, t_ours, t_ref, ["devpearson", "pearson"])


if __name__ == "__main__":
    main()
