"""Training against InferSent's own loop: its ``train_nli.py`` and ``objective=nli`` on the same SNLI sentences.

    git -C <InferSent clone> archive c752882~1 | tar -x -C /tmp/InferSent     # the last revision with train_nli.py
    python benchmarks/infersent_nli.py --infersent /tmp/InferSent --sizes 2048 --pairs 640 --dev-pairs 320  # speed
    python benchmarks/infersent_nli.py --infersent /tmp/InferSent --sizes 256 --pairs 36389       # one epoch, dev acc
    python benchmarks/infersent_nli.py --infersent /tmp/InferSent --sizes 2048 --pairs 192 --dev-pairs 64 \
        --count-dispatch 2      # the operators a batch dispatches on each side, as a GPU would launch them
    python benchmarks/infersent_nli.py --smoke [--infersent /tmp/InferSent]   # made-up pairs, 2 x 16, seconds

Both sides, one after the other in this run, train a BiLSTM-max (``--sizes``: hidden units per direction) over the
same frozen GloVe 6B 50d vectors for one epoch of the first ``--pairs`` SNLI training pairs (the SNLI rows of the
data's training subsets, ``nli/train-subsets``), batch 64, SGD lr 0.1, gradient norm clipped at 5, the loss averaged
over the batch once; then each scores SNLI dev (9,842 pairs). The sentences are tokenised once, by this project's
Treebank tokenizer, lowercased (GloVe 6B is lowercase), and written in InferSent's format (``s1.train``, ``s2.train``,
``labels.train``, dev, test) for both: InferSent splits on spaces, ours tokenises the same text to the same tokens.

InferSent's code is never part of this repository: ``--infersent`` names a folder holding its ``train_nli.py``,
``data.py``, ``models.py`` and ``mutils.py`` (facebookresearch/InferSent before c752882, which removed them). Its
files are patched at run time, in a temporary copy, only where a CPU, current torch, numpy and Python require it or
where the comparison needs it; every patch is printed and recorded (``PATCHES``). Measured per side: the training
loop's seconds (InferSent: its ``trainepoch``, batch preparation included; ours, ``python train.py objective=nli
experiment=nli`` on the same files: from the first batch's start to the last batch's end, data loading included,
``lib.timing.LoopTimer``), pairs/s and sentences/s (two a pair), and SNLI dev accuracy after the
same pairs. Where the two models still differ is recorded too (``DIFFERENCES``). ``--count-dispatch N``: both loops'
operators in N batches after the first (``lib.step_dispatch.StepDispatch``: kernels, views, host reads, the
recurrent call counted as cuDNN's one kernel each way), ours packed as on a GPU (``+encoder.packed=true``). The
figures go to a JSON record (``--output``, default ``logs/benchmarks/infersent_nli/<time>.json``).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from lib import records, reference_code, smoke_inputs
from sentence_lab.text.glove import load_glove
from sentence_lab.text.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
MARK = "BENCHMARK"  # the lines the patched script prints for this benchmark

# (file, text replaced, replacement, why): applied to a temporary copy, each must match.
PATCHES = [
    ("train_nli.py", "torch.cuda.set_device(params.gpu_id)", "DEVICE = torch.device(os.environ['BENCH_DEVICE'])",
     "no GPU here: the device comes from the benchmark (cpu, or cuda when there is one)"),
    ("train_nli.py", ".cuda()", ".to(DEVICE)", "its hard-coded .cuda() calls (batches, targets, model, loss)"),
    ("train_nli.py", "for sent in eval(data_type)[split]])", "for sent in eval(data_type)[split]], dtype=object)",
     "numpy >= 1.24 refuses ragged arrays unless dtype=object"),
    ("train_nli.py", "loss_fn.size_average = False", "loss_fn.reduction = 'sum'",
     "current torch ignores size_average set after construction (the loss would be a mean, then divided by the "
     "batch size again in the loop): summed, so that the loop's division by k averages it once, as InferSent meant"),
    ("train_nli.py", "all_costs.append(loss.data[0])", "all_costs.append(loss.item())",
     "loss.data[0] fails on a 0-d tensor"),
    ("train_nli.py", "total_norm += p.grad.data.norm() ** 2", "total_norm += p.grad.data.norm().item() ** 2",
     "the gradient norm as a Python number, as the torch it was written for returned it (np.sqrt of a CUDA tensor "
     "fails)"),
    ("train_nli.py", ".cpu().sum()", ".cpu().sum().item()",
     "the correct counts as Python numbers: current torch cannot round() a tensor"),
    ("train_nli.py", "for stidx in range(0, len(s1), params.batch_size):",
     "for stidx in range(0, min(len(s1), int(os.environ['BENCH_PAIRS'])), params.batch_size):",
     "train on the benchmark's first --pairs pairs only"),
    ("train_nli.py", "    train_acc = trainepoch(epoch)\n",
     f"    _t0 = time.perf_counter()\n    train_acc = trainepoch(epoch)\n"
     f"    print('{MARK} train_seconds', time.perf_counter() - _t0, flush=True)\n",
     "time the training loop (trainepoch: the shuffle, batch preparation, steps)"),
    ("train_nli.py", "    eval_acc = evaluate(epoch, 'valid')\n",
     f"    eval_acc = evaluate(epoch, 'valid')\n    print('{MARK} dev_acc', float(eval_acc), flush=True)\n",
     "report SNLI dev accuracy after the epoch"),
    ("train_nli.py", "# Run best model on test set.",
     "raise SystemExit(0)  # the benchmark stops here\n# Run best model",
     "stop after the epoch's dev accuracy (no reload, no test pass)"),
    ("mutils.py", "inspect.getargspec(", "inspect.getfullargspec(", "inspect.getargspec is gone in Python 3.11"),
]
# An ablation (--exclude-padding-from-max): InferSent's version 1 encoder (the one train_nli.py builds) max-pools over
# the zero outputs pad_packed_sequence leaves at padded positions, so every sentence shorter than its batch's longest
# gets max(0, ...) in each dimension; its version 2 sets exact zeros to -1e9 first (models.py, InferSent.forward).
EXCLUDE_PADDING = ("train_nli.py", "'encoder_type'   :  params.encoder_type   ,",
                   "'encoder_type'   :  params.encoder_type   , 'version': 2,",
                   "ablation: version 2 of InferSent's encoder, whose max-pooling leaves the padding out (its "
                   "<s>, </s> markers stay: train_nli.py adds them itself)")
# An ablation (--without-markers): the sentences as the words GloVe has, without the <s> ... </s> that train_nli.py
# wraps each in (zero vectors with GloVe 6B, two more time steps); a sentence left with no word keeps one </s>.
WITHOUT_MARKERS = ("train_nli.py",
                   "np.array([['<s>'] +\n            [word for word in sent.split() if word in word_vec] +"
                   "\n            ['</s>'] for sent",
                   "np.array([([word for word in sent.split() if word in word_vec] or ['</s>']) for sent",
                   "ablation: no <s>, </s> markers around the sentences (as ours)")
# An ablation (--one-hidden-layer, with --infersent-args "--nonlinear_fc 1"): the paper's classifier, an MLP with one
# hidden layer of 512 tanh units (Conneau et al. 2017, section 3.3; ours), instead of train_nli.py's two.
ONE_HIDDEN_LAYER = ("models.py",
                    "                nn.Tanh(),\n                nn.Dropout(p=self.dpout_fc),\n"
                    "                nn.Linear(self.fc_dim, self.fc_dim),\n                nn.Tanh(),\n",
                    "                nn.Tanh(),\n",
                    "ablation: the nonlinear classifier with one hidden layer (the paper's and ours), not two")
# With --count-dispatch: each training batch of InferSent's loop (batch preparation, forward, loss, backward, its
# gradient-norm loop and the update) counted by lib.step_dispatch.StepDispatch, as ours is by TrainStepDispatch.
COUNT_DISPATCH = [
    ("train_nli.py", "import torch\n",
     "import torch\nimport json as _json\nfrom lib.step_dispatch import StepDispatch as _StepDispatch\n"
     "_dispatch = _StepDispatch(int(os.environ['BENCH_DISPATCH_STEPS']), skip=1)\n",
     "count what each training batch dispatches (--count-dispatch)"),
    ("train_nli.py", "params.batch_size):\n        # prepare batch\n",
     "params.batch_size):\n        _dispatch.start()\n        # prepare batch\n", "a batch's count starts"),
    ("train_nli.py", "        optimizer.param_groups[0]['lr'] = current_lr\n",
     "        optimizer.param_groups[0]['lr'] = current_lr\n        _dispatch.end()\n", "and ends after the update"),
    ("train_nli.py", "    train_acc = round(100 * correct/len(s1), 2)\n",
     f"    print('{MARK} dispatch', _json.dumps(_dispatch.record()), flush=True)\n"
     "    train_acc = round(100 * correct/len(s1), 2)\n", "report the counts after the epoch"),
]
DIFFERENCES = [
    "classifier: InferSent's default (nonlinear_fc 0) is three linear layers 4*2H -> 512 -> 512 -> 3 with no "
    "non-linearity; ours is the paper's MLP, 4*2H -> 512 (tanh) -> 3",
    "vocabulary: InferSent keeps every word of train, dev and test that GloVe has, as numpy rows copied into each "
    "batch; ours the 20,000 most frequent training words in a frozen embedding table (others <unk>)",
    "max-pooling: InferSent's version 1 encoder (train_nli.py's) takes the max over padded positions too, whose "
    "outputs are zeros (--exclude-padding-from-max: its version 2, which leaves them out, as ours does)",
    "sentence markers: InferSent wraps each sentence in <s> ... </s> (zero vectors here: GloVe 6B has neither), two "
    "more time steps a sentence; ours adds none",
    "order: both shuffle the pairs once an epoch with seed 1234 (InferSent np.random.permutation, ours its epoch "
    "sampler), so the batches differ",
    "the recurrent pass: InferSent packs each batch (time-major) for torch's LSTM; ours runs it padded in length "
    "buckets on the CPU, packed on a GPU or with encoder.packed=true (sentence_lab/encoders/rnn.py)",
]


def write_snli(data_dir: Path, out: Path, tokenizer: Tokenizer, pairs: int, dev_pairs: int | None) -> int:
    """SNLI's training rows of the train subsets (the first ``pairs``) and SNLI dev/test (the first ``dev_pairs`` of
    each; None: all), tokenised and lowercased, in InferSent's format. Returns the training pairs written."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str]] = []
    with open(data_dir / "nli" / "train-subsets" / "snli_mnli_train_subsets.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row["source"].lower().startswith("snli") and len(rows) < pairs:
                rows.append((row["premise"], row["hypothesis"], row["label"]))
    splits = {"train": rows}
    for split in ("dev", "test"):
        folder = data_dir / "nli" / "snli"
        s1, s2, labels = ((folder / f"{name}.{split}").read_text().splitlines() for name in ("s1", "s2", "labels"))
        splits[split] = list(zip(s1, s2, labels))[:dev_pairs]
    for split, triples in splits.items():
        for i, name in enumerate(("s1", "s2")):
            lines = [" ".join(tokenizer(t[i])) for t in triples]
            (out / f"{name}.{split}").write_text("\n".join(lines) + "\n")
        (out / f"labels.{split}").write_text("\n".join(t[2] for t in triples) + "\n")
    return len(rows)


def write_glove_text(path: Path) -> None:
    """GloVe 6B 50d in the text format InferSent's loader reads (``word v1 ... v50`` per line), plus zero rows for
    ``<s>`` and ``</s>``: InferSent's loop looks both up in its word vectors (GloVe 840B, which it was written for,
    has them; 6B has neither)."""
    index, vectors = load_glove()
    with open(path, "w") as f:
        for word, row in index.items():
            f.write(word + " " + " ".join(f"{x:.6g}" for x in vectors[row]) + "\n")
        for marker in ("<s>", "</s>"):
            f.write(marker + " " + " ".join(["0"] * vectors.shape[1]) + "\n")


def patched_infersent(source: Path, target: Path, ablations: list[tuple[str, str, str, str]]) -> list[dict]:
    """InferSent's four files copied into ``target`` with ``PATCHES`` and the ``ablations`` asked for
    (``EXCLUDE_PADDING``, ``WITHOUT_MARKERS``, ``ONE_HIDDEN_LAYER``) applied; what each patch changed."""
    target.mkdir(parents=True, exist_ok=True)
    for name in reference_code.INFERSENT_FILES:
        if not (source / name).is_file():
            raise SystemExit(f"{source} holds no {name}: --infersent names a folder of InferSent's files before "
                             "c752882 (git -C <clone> archive c752882~1 | tar -x -C <folder>)")
        shutil.copy(source / name, target / name)
    applied = []
    for name, old, new, why in [*PATCHES, *ablations]:
        text = (target / name).read_text()
        count = text.count(old)
        if not count:
            raise SystemExit(f"InferSent's {name} has no {old!r}: not the revision this benchmark patches")
        (target / name).write_text(text.replace(old, new))
        applied.append({"file": name, "replaced": old.strip(), "with": new.strip(), "times": count, "why": why})
    return applied


def run_infersent(folder: Path, data: Path, glove: Path, hidden: int, pairs: int, device: str,
                  extra: list[str], dispatch_steps: int = 0) -> dict:
    cmd = [sys.executable, "train_nli.py", "--nlipath", str(data), "--word_emb_path", str(glove),
           "--word_emb_dim", "50", "--enc_lstm_dim", str(hidden), "--encoder_type", "InferSent", "--n_epochs", "1",
           "--batch_size", "64", "--optimizer", "sgd,lr=0.1", "--max_norm", "5", "--outputdir", str(folder / "out"),
           *extra]
    env = dict(os.environ, BENCH_DEVICE=device, BENCH_PAIRS=str(pairs), BENCH_DISPATCH_STEPS=str(dispatch_steps),
               PYTHONPATH=os.pathsep.join([str(folder), str(ROOT), str(ROOT / "benchmarks")]))
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"InferSent's train_nli.py failed:\n{done.stderr[-3000:]}")
    found = dict(re.findall(rf"^{MARK} (\w+) (.+)$", done.stdout, re.M))
    result = {"train_seconds": float(found["train_seconds"]), "dev_acc": float(found["dev_acc"]),
              "train_curve": train_curve(done.stdout)}
    if "dispatch" in found:
        result["dispatch"] = json.loads(found["dispatch"])
    return result


def train_curve(stdout: str) -> list[dict]:
    """InferSent's progress lines (every 100 batches): pairs seen, the mean loss of those 100 batches and the
    training accuracy so far (%)."""
    lines = re.findall(r"^(\d+) ; loss (\S+) ; sentence/s \d+ ; words/s \d+ ; accuracy train : (\S+)$", stdout, re.M)
    return [{"pairs": int(pairs) + 64, "loss": float(loss), "train_acc": float(acc)} for pairs, loss, acc in lines]


def profile_rows(text: str, top: int = 15) -> list[str]:
    """The ``top`` actions of Lightning's ``SimpleProfiler`` report by total time (its table's rows, as printed)."""
    rows = [line.strip() for line in text.splitlines() if line.strip().startswith("|") and "Action" not in line]
    timed = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        try:
            timed.append((float(cells[3]), row))
        except (IndexError, ValueError):
            continue
    return [row for _, row in sorted(timed, reverse=True)[:top]]


def run_ours(data: Path, out: Path, hidden: int, device: str, seed: int, profile: bool = False,
             extra: list[str] | None = None, dispatch_steps: int = 0) -> dict:
    """``python train.py objective=nli experiment=nli`` on the written files, one epoch, timed by
    ``lib.timing.LoopTimer``; with ``profile``, under Lightning's ``SimpleProfiler`` (each hook's and step part's
    seconds: where a step's time goes besides the model); ``extra``: more Hydra overrides (an ablation)."""
    record = out / "loop_timer.json"
    cmd = [sys.executable, str(ROOT / "train.py"), "objective=nli", "experiment=nli", f"encoder.hidden_dim={hidden}",
           "~data.train", f"+data.train={{format: infersent, path: '{data}', split: train}}",
           f"data.valid.path={data}", "~data.test",
           "data.tokenizer.kind=whitespace", "trainer.max_epochs=1", "trainer.num_sanity_val_steps=0",
           f"trainer.accelerator={'gpu' if device == 'cuda' else 'cpu'}", "logger=none", "test_after_fit=false",
           "~callbacks.eval_suite", "print_config=false", f"hydra.run.dir={out / 'run'}",
           f"paths.cache_dir={out / 'cache'}", "+callbacks.loop_timer._target_=lib.timing.LoopTimer",
           f"+callbacks.loop_timer.output={record}", f"seed={seed}", *(extra or [])]
    if profile:
        cmd.append(f"++trainer.profiler={{_target_: lightning.pytorch.profilers.SimpleProfiler, dirpath: '{out}', "
                   "filename: profile}")
    if dispatch_steps:  # the batch packed, as a GPU runs it (the CPU's default is padded buckets)
        cmd += ["+encoder.packed=true",
                "+callbacks.step_dispatch._target_=lib.step_dispatch.TrainStepDispatch",
                f"+callbacks.step_dispatch.output={out / 'dispatch.json'}",
                f"+callbacks.step_dispatch.steps={dispatch_steps}"]
    # the callbacks above are benchmarks/lib's: train.py finds them with benchmarks/ on its path
    path = [str(ROOT / "benchmarks"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"train.py objective=nli failed:\n{done.stderr[-3000:]}")
    timed = json.loads(record.read_text())
    result = {"train_seconds": timed["seconds"], "batches": timed["batches"],
              "dev_acc": round(100 * timed["metrics"]["val/acc"], 2)}
    if dispatch_steps:
        result["dispatch"] = json.loads((out / "dispatch.json").read_text())
    if profile:
        report = out / "fit-profile.txt"
        result["profile"] = profile_rows(report.read_text()) if report.is_file() else ["no profile written"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infersent", type=Path, help="a folder of InferSent's files (see above); without it, "
                        "only our side runs")
    parser.add_argument("--sizes", default="256,2048", help="hidden units per direction, comma-separated")
    parser.add_argument("--infersent-args", default="", help="more arguments for train_nli.py (an ablation: "
                        "'--nonlinear_fc 1' gives its classifier tanh between its layers)")
    parser.add_argument("--ours-args", default="", help="more Hydra overrides for our side (an ablation: "
                        "'trainer.deterministic=false')")
    parser.add_argument("--pairs", type=int, default=1280, help="training pairs per side (64 a batch)")
    parser.add_argument("--exclude-padding-from-max", action="store_true", help="ablation: InferSent's version 2 "
                        "pooling (padding left out of the max, as ours); see EXCLUDE_PADDING")
    parser.add_argument("--without-markers", action="store_true", help="ablation: InferSent's sentences without "
                        "its <s>, </s> markers, as ours; see WITHOUT_MARKERS")
    parser.add_argument("--one-hidden-layer", action="store_true", help="ablation: InferSent's nonlinear classifier "
                        "(--infersent-args '--nonlinear_fc 1') with one hidden layer, as the paper's and ours; see "
                        "ONE_HIDDEN_LAYER")
    parser.add_argument("--sides", choices=("both", "infersent", "ours"), default="both",
                        help="which loops run (an ablation of InferSent's alone: --sides infersent)")
    parser.add_argument("--seed", type=int, default=1234, help="both sides' seed (InferSent's default, ours)")
    parser.add_argument("--dev-pairs", type=int, help="score the first N SNLI dev pairs (default all 9,842: a 2 x "
                        "2048 model's dev pass alone takes minutes on two cores)")
    parser.add_argument("--profile", action="store_true", help="our side under Lightning's SimpleProfiler: the "
                        "top actions by total seconds in the record and printed")
    parser.add_argument("--count-dispatch", type=int, default=0, metavar="N", help="count the operators each side "
                        "dispatches in N training batches after the first, as a GPU would launch them (the recurrent "
                        "layer one call each way; ours packed): per batch, beside the speed")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("SENTENCE_DATA", "data")))
    records.add_options(parser, "2 x 16 units, 256 pairs")
    args = parser.parse_args(argv)
    run = records.start("infersent_nli", args, ROOT)
    if args.smoke:
        args.sizes, args.pairs = "16", 256
    if args.infersent is None:
        print("no --infersent folder: InferSent's side is not run, ours alone")
    rows = []
    with tempfile.TemporaryDirectory(prefix="infersent_nli_") as tmp_name:
        tmp = Path(tmp_name)
        ablations = [patch for patch, asked in ((EXCLUDE_PADDING, args.exclude_padding_from_max),
                                                (WITHOUT_MARKERS, args.without_markers),
                                                (ONE_HIDDEN_LAYER, args.one_hidden_layer)) if asked]
        ablations += COUNT_DISPATCH if args.count_dispatch else []
        patches = patched_infersent(args.infersent, tmp / "infersent", ablations) if args.infersent else []
        for patch in patches:
            print(f"patched {patch['file']} ({patch['times']}x): {patch['replaced']!r} -> {patch['with']!r}: "
                  f"{patch['why']}")
        if args.smoke:
            pairs = args.pairs
            smoke_inputs.tiny_nli(tmp / "snli", pairs)
        else:
            pairs = write_snli(args.data_dir, tmp / "snli", Tokenizer("treebank", lowercase=True), args.pairs,
                               args.dev_pairs)
        if args.infersent:
            write_glove_text(tmp / "glove.6B.50d.txt")
        print(f"\n{pairs} SNLI training pairs, batch 64, SGD lr 0.1, {args.device}, torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads\n\n| BiLSTM-max | side | train s | pairs/s | sentences/s | "
              f"SNLI dev acc |\n|---|---|---|---|---|---|", flush=True)
        for hidden in (int(h) for h in args.sizes.split(",")):
            theirs = run_infersent(tmp / "infersent", tmp / "snli", tmp / "glove.6B.50d.txt", hidden, pairs,
                                   args.device, ["--seed", str(args.seed), *args.infersent_args.split()],
                                   args.count_dispatch) \
                if args.infersent and args.sides != "ours" else None
            ours = run_ours(tmp / "snli", tmp / f"ours_{hidden}", hidden, args.device, args.seed, args.profile,
                            args.ours_args.split(), args.count_dispatch) \
                if args.sides != "infersent" else None
            for side, result in (("InferSent train_nli.py", theirs), ("ours (objective=nli)", ours)):
                if result is None:
                    continue
                result.update(pairs_per_second=pairs / result["train_seconds"])
                print(f"| 2 x {hidden} | {side} | {result['train_seconds']:.1f} | {result['pairs_per_second']:.1f} "
                      f"| {2 * result['pairs_per_second']:.1f} | {result['dev_acc']:.2f} |", flush=True)
            rows.append({"hidden": hidden, "pairs": pairs, "infersent": theirs, "ours": ours,
                         "speed_ratio": ours["pairs_per_second"] / theirs["pairs_per_second"] if theirs and ours
                         else None})
            if rows[-1]["speed_ratio"]:
                print(f"| 2 x {hidden} | ours / InferSent | | {rows[-1]['speed_ratio']:.2f}x | | |", flush=True)
            for side, result in (("InferSent train_nli.py", theirs), ("ours (objective=nli)", ours)):
                if result and "dispatch" in result:
                    d = result["dispatch"]
                    print(f"dispatch 2 x {hidden}, {side}: {d['kernels_a_step']} kernels a batch, "
                          f"{d['host_reads_a_step']} host reads ({d['steps_counted']} batches counted)", flush=True)
            for line in (ours or {}).get("profile", []):
                print(f"profile 2 x {hidden}: {line}", flush=True)
    for line in DIFFERENCES:
        print(f"differs: {line}")
    run.write({"device": args.device, "pairs": args.pairs, "dev_pairs": args.dev_pairs, "seed": args.seed,
               "infersent_args": args.infersent_args, "ours_args": args.ours_args,
               "sides": args.sides, "patches": patches, "differences": DIFFERENCES, "rows": rows,
               "numpy": np.__version__})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
