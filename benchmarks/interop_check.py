"""A trained run, exported and run elsewhere: do the vectors and scores stay ours?

    SENTENCE_DATA=../shared/data python benchmarks/interop_check.py logs/train/runs/<run> [--suite MR,STS14]
    python benchmarks/interop_check.py --smoke     # a 2-step run on a tiny corpus, a tiny generated STS-B

1. Exports the run (``tools.export_st``), loads it with ``SentenceTransformer(..., trust_remote_code=True)`` and
   prints, over the STS-B test sentences, the largest per-sentence difference from ``SentenceModel.encode`` relative
   to the vector's norm (vocabulary expansion on, as ``evaluate.py``).
2. Builds MTEB's STS task from the same STS-B test pairs (SentEval's tokenised copy, read locally) and scores it in
   MTEB 2.x through both paths (the exported folder; ``adapters.mteb.mteb_model`` on the checkpoint), beside our
   engine's ``STSBenchmarkCosine`` (test Spearman of the cosine: the same number by definition).
3. With ``--suite MR,STS14,...``: ``evaluate.py`` on the exported folder (``encoder=sentence_transformers
   encoder.trust_remote_code=true``) and on the checkpoint, task by task (prototype protocol, same seed).
Prints a table and writes ``<run>/interop_check.json`` (with machine, versions and revision), and the same record
to ``--output`` (default ``logs/benchmarks/interop_check/<time>.json``). Needs the ``sentence-transformers`` and
``mteb`` extras.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mteb
import numpy as np
from sentence_transformers import SentenceTransformer

from lib import records, smoke_inputs
from sentence_lab.adapters.export_st import main as export_main
from sentence_lab.adapters.mteb import local_sts_task, mteb_model
from sentence_lab.adapters.trained import load_checkpoint_encoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import git_revision, library_versions
from sentence_lab.evaluation.runner import load_tasks, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("PROJECT_ROOT", str(ROOT))


def tiny_run(folder: Path) -> Path:
    """A Quick-Thoughts run of two steps (BiLSTM-max, 2 x 16 units) on a tiny generated corpus, trained here as
    ``train.py`` would: the smoke run's checkpoint. Returns the run directory."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    from sentence_lab.runs.run import fit
    from sentence_lab.runs.run_dir import register_resolvers

    register_resolvers()
    corpus = smoke_inputs.tiny_corpus(folder / "corpus")
    overrides = ["objective=qt", "encoder=bilstm_max", "encoder.hidden_dim=16", f"data.train_dir={corpus / 'train'}",
                 f"data.valid_dir={corpus / 'valid'}", f"paths.cache_dir={folder / 'cache'}", "data.batch_size=8",
                 "data.preprocess_workers=0", "trainer.max_steps=2", "trainer.max_epochs=1",
                 "++trainer.val_check_interval=1", "++trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0",
                 "logger=none", "~callbacks.eval_suite", "~callbacks.rich_progress_bar", "~callbacks.model_summary",
                 "test_after_fit=false", "print_config=false"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    run_dir = folder / "run"
    with open_dict(cfg):
        cfg.paths.output_dir = str(run_dir)
        del cfg.hydra
    fit(cfg)
    return run_dir


def mteb_score(model, task) -> float:
    (result,) = mteb.evaluate(model, task, cache=None, show_progress_bar=False).task_results
    return float(result.get_score())


def suite_scores(source: list[str], tasks: str, out: Path) -> dict[str, float]:
    """``evaluate.py <source> tasks=[...]``'s main score per task."""
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *source, f"tasks=[{tasks}]", f"results_file={out}",
           f"hydra.run.dir={out.parent / ('.hydra_' + out.stem)}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-500:]}")
    return {task: r["main_score"] for task, r in json.loads(out.read_text())["results"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="?", help="a run directory (its best.ckpt) or a .ckpt file")
    parser.add_argument("--suite", default=None, help="also these tasks through evaluate.py, exported and checkpoint")
    records.add_options(parser, "a Quick-Thoughts run of 2 steps on a tiny generated corpus, checked on a tiny "
                                  "generated STS-B (no run or SENTENCE_DATA needed)")
    args = parser.parse_args(argv)
    run = records.start("interop_check", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="interop_smoke_") as tmp:
        data = os.environ.get("SENTENCE_DATA")
        if args.smoke:
            data = str(smoke_inputs.tiny_senteval(Path(tmp) / "data"))
            os.environ["SENTENCE_DATA"] = data  # evaluate.py of --suite reads the same tree
            args.run = args.run or tiny_run(Path(tmp))
        if args.run is None:
            parser.error("the run to check is needed (or --smoke)")
        if not data:
            raise SystemExit("set SENTENCE_DATA to the data root (e.g. ../shared/data): STS-B is read from there")
        return check(args, data, run)


def check(args: argparse.Namespace, data: str, run: records.Run) -> int:
    (sts,) = load_tasks(["STSBenchmarkCosine"], data)
    assert sts.data is not None, sts.error
    test = sts.data.splits["test"]
    sentences = sorted(set(test.a) | set(test.second))
    record: dict = {"run": str(args.run), "sentences": len(sentences)}
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        export_main([f"ckpt_path={args.run}", f"out={out}"])
        record["export_seconds"] = round(time.perf_counter() - started, 2)
        exported = SentenceTransformer(out, trust_remote_code=True, device="cpu")
        ours, _ = load_checkpoint_encoder(str(args.run), vocab_expansion=True)
        mine, theirs = ours.encode(sentences), exported.encode(sentences, batch_size=128)
        relative = np.abs(mine - theirs).max(1) / np.maximum(np.linalg.norm(mine, axis=1), 1e-12)
        record["largest_relative_difference"] = float(relative.max())
        task = local_sts_task("STSBenchmarkLocal", test.a, test.second, test.y.tolist())
        record["mteb_exported"] = mteb_score(exported, task)
        record["mteb_wrapper"] = mteb_score(mteb_model(f"ckpt_path={Path(args.run).resolve()}"), task)
        if args.suite:
            scratch = Path(out) / "suite"
            scratch.mkdir()
            record["suite"] = {
                "exported": suite_scores(["encoder=sentence_transformers", f"encoder.model={out}",
                                          "encoder.trust_remote_code=true"], args.suite, scratch / "exported.json"),
                "checkpoint": suite_scores([f"ckpt_path={Path(args.run).resolve()}"], args.suite,
                                           scratch / "checkpoint.json")}
    result = run_task(sts, EmbeddingCache(ours), ProtocolParams())
    record["ours_STSBenchmarkCosine"] = float(result["test"]["spearman"])
    print(f"{record['sentences']} STS-B test sentences; largest |ours - sentence-transformers| / |ours|: "
          f"{record['largest_relative_difference']:.2e}")
    print("| STS-B test, Spearman of the cosine | value |\n|---|---|")
    for key in ("ours_STSBenchmarkCosine", "mteb_exported", "mteb_wrapper"):
        print(f"| {key} | {record[key]:.6f} |")
    if "suite" in record:
        print("\n| task | exported folder | checkpoint |\n|---|---|---|")
        for name, value in record["suite"]["checkpoint"].items():
            print(f"| {name} | {record['suite']['exported'].get(name)} | {value} |")
    results = dict(record)
    record.update(machine=platform.platform(), python=platform.python_version(), versions=library_versions(),
                  revision=git_revision(ROOT), mteb=mteb.__version__)
    target = Path(args.run) if Path(args.run).is_dir() else Path(args.run).parent
    (target / "interop_check.json").write_text(json.dumps(record, indent=2) + "\n")
    run.write(results, libraries=("mteb", "sentence-transformers", "transformers"), data=data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
