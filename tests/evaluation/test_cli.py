"""evaluate.py end to end on fixtures: the JSON and Markdown it writes, and its one-line errors."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentence_lab.evaluation.results import SCHEMA_VERSION, read_results
from tests.helpers import processes
from tests.helpers.in_process import run_main
from tests.helpers.small_filesystem import fill, small_filesystem

ROOT = Path(__file__).resolve().parents[2]


def _evaluate(data_root: Path, *overrides: str, cwd: Path, here: bool = False) -> subprocess.CompletedProcess:
    """``python evaluate.py <overrides>`` on ``data_root``: in this process when ``here`` (what it writes, prints and
    exits with is the same), else a process of its own (the command as a user starts it)."""
    env = {**os.environ, "SENTENCE_DATA": str(data_root), "PROJECT_ROOT": str(cwd)}
    if here:
        return run_main("evaluate.py", list(overrides), cwd=cwd, env=env)
    return processes.run([sys.executable, str(ROOT / "evaluate.py"), *overrides], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_bow_glove_writes_results(senteval_root, tmp_path):
    out = tmp_path / "res" / "results.json"
    proc = _evaluate(senteval_root, "encoder=bow_glove", "tasks=[MR,STS14,SICKRelatedness,TopConstituents]",
                     "evaluation.kfold=2", "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]",
                     f"results_file={out}", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert set(doc["results"]) == {"MR", "STS14", "SICKRelatedness"}
    assert {"acc", "devacc", "main_score", "n", "seconds"} <= set(doc["results"]["MR"])
    assert doc["results"]["MR"]["n"] == 80
    assert set(doc["results"]["STS14"]["all"]["spearman"]) == {"mean", "wmean"}
    assert 0 <= doc["results"]["SICKRelatedness"]["mse"]
    assert "TopConstituents" in doc["skipped"]
    assert doc["protocol"]["kfold"] == 2 and doc["protocol"]["name"] == "prototype"
    assert doc["encoder"]["name"] == "bow_glove" and "torch" in doc["versions"] and "git_revision" in doc
    assert doc["kind"] == "evaluate" and doc["schema_version"] == SCHEMA_VERSION and doc == read_results(out)
    md = out.with_suffix(".md").read_text()
    assert "| MR |" in md and "| MR |" in proc.stdout


@pytest.mark.slow
def test_cli_default_results_file_in_run_dir(senteval_root, tmp_path):
    proc = _evaluate(senteval_root, "tasks=STS13", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = list((tmp_path / "logs" / "evaluate").rglob("results.json"))
    assert len(found) == 1 and "STS13" in json.loads(found[0].read_text())["results"]


@pytest.mark.slow
def test_cli_unknown_task_lists_valid_names(senteval_root, tmp_path):
    proc = _evaluate(senteval_root, "tasks=[MR,Bogus]", cwd=tmp_path, here=True)
    assert proc.returncode == 2
    assert "Bogus" in proc.stderr and "CoordinationInversion" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_cli_full_config_and_mlp_key(senteval_root, tmp_path):
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "tasks=STS13", "evaluation=full", "evaluation.classifier.nhid=50",
                     f"results_file={out}", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    protocol = json.loads(out.read_text())["protocol"]
    assert (protocol["name"], protocol["kfold"], protocol["optim"], protocol["nhid"]) == ("full", 10, "adam", 50)


@pytest.mark.slow
@pytest.mark.real_data
def test_real_data_counts():
    root = os.environ.get("SENTENCE_DATA")
    if not root:
        pytest.skip("SENTENCE_DATA not set")
    from sentence_lab.tasks import TASKS

    root = Path(root)
    expected = {"MR": {"all": 10662}, "CR": {"all": 3775}, "SUBJ": {"all": 10000}, "MPQA": {"all": 10606},
                "TREC": {"train": 5452, "test": 500}, "SST2": {"train": 67349, "dev": 872, "test": 1821},
                "SST5": {"train": 8544, "dev": 1101, "test": 2210}, "MRPC": {"train": 4076, "test": 1725},
                "SICKEntailment": {"train": 4500, "dev": 500, "test": 4927},
                "SICKRelatedness": {"train": 4500, "dev": 500, "test": 4927},
                "STSBenchmark": {"train": 5749, "dev": 1500, "test": 1379}}
    for task, sizes in expected.items():
        data = TASKS[task].loader(root)
        assert {k: len(v) for k, v in data.splits.items()} == sizes, task
    sts_totals = {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186}
    for task, total in sts_totals.items():
        assert TASKS[task].loader(root).n == total, task


@pytest.mark.slow
def test_cli_untrained_neural_encoder(senteval_root, tmp_path):
    pytest.importorskip("sentence_lab.training.module")
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random",
                     "tasks=[STS13]", f"results_file={out}", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    enc = json.loads(out.read_text())["encoder"]
    assert enc["source"] == "untrained" and "random init" in enc["untrained"] and enc["output_dim"] == 8


@pytest.mark.slow
def test_cli_checkpoint(senteval_root, tmp_path):
    untrained = pytest.importorskip("sentence_lab.training.untrained")
    import torch

    from sentence_lab.text import Tokenizer, Vocab

    tok = Tokenizer(kind="whitespace", lowercase=True)
    vocab = Vocab.from_sentences([["good", "movie"], ["bad", "film"]])
    cfg = {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": 8, "pooling": "mean",
           "embedding_init": "random", "freeze_embeddings": False, "dropout": 0.0}
    model = untrained.untrained_model(cfg, vocab, tok, seed=3)
    ckpt = tmp_path / "m.ckpt"
    torch.save({"vocab": vocab.itos, "hyper_parameters": dict(model.hparams), "state_dict": model.state_dict()}, ckpt)
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, f"ckpt_path={ckpt}", "tasks=[STS13]", f"results_file={out}", cwd=tmp_path,
                     here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["encoder"]["source"].startswith("checkpoint") and "STS13" in doc["results"]
    # Two known words cannot fit a 50-d expansion map: evaluated without it, and the reason is recorded.
    assert "at least 50 words" in doc["encoder"]["vocabulary_expansion"]["skipped"]
    assert "vocabulary expansion skipped" in proc.stderr
    assert 0 < doc["results"]["STS13"]["oov_rate"] <= 1
    bad = _evaluate(senteval_root, f"ckpt_path={tmp_path / 'nope.ckpt'}", "tasks=[STS13]", cwd=tmp_path, here=True)
    assert bad.returncode == 2 and "checkpoint not found" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_cli_concatenates_checkpoints_for_combine_qt(senteval_root, tmp_path):
    untrained = pytest.importorskip("sentence_lab.training.untrained")
    import numpy as np
    import torch

    from sentence_lab.text import Tokenizer, Vocab
    from sentence_lab.training.module import SentenceModel

    tok = Tokenizer(kind="whitespace", lowercase=True)
    vocab = Vocab.from_sentences([["good", "movie"], ["bad", "film"]])
    paths = []
    for seed, dim in ((3, 8), (4, 6)):
        cfg = {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": dim, "pooling": "mean",
               "embedding_init": "random", "freeze_embeddings": False, "dropout": 0.0}
        model = untrained.untrained_model(cfg, vocab, tok, seed=seed)
        paths.append(tmp_path / f"m{seed}.ckpt")
        torch.save({"vocabs": {"source": vocab.itos}, "hyper_parameters": dict(model.hparams),
                    "state_dict": model.state_dict()}, paths[-1])
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, f"ckpt_path=[{paths[0]},{paths[1]}]", "tasks=[STS13]", f"results_file={out}",
                     "vocab_expansion=false", cwd=tmp_path, here=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    enc = json.loads(out.read_text())["encoder"]
    assert enc["output_dim"] == 14 and enc["name"].startswith("concat(") and len(enc["parts"]) == 2
    from sentence_lab.evaluation.encoders.text_encoders import Concatenation

    parts = [SentenceModel.load_checkpoint(str(p), map_location="cpu") for p in paths]
    joined = Concatenation(parts, [{}, {}]).encode(["good film"])
    assert np.allclose(joined, np.concatenate([p.encode(["good film"]) for p in parts], axis=1))


@pytest.mark.slow
def test_cli_results_file_is_merged_not_replaced_and_another_encoder_is_refused(senteval_root, tmp_path):
    out = tmp_path / "res" / "results.json"
    fast = ["evaluation.kfold=2", "evaluation.max_epoch=2", "evaluation.l2_grid=[1e-3]", f"results_file={out}"]
    first = _evaluate(senteval_root, "encoder=bow_glove", "tasks=[STS13,STS14]", *fast, cwd=tmp_path, here=True)
    assert first.returncode == 0, first.stderr[-2000:]
    second = _evaluate(senteval_root, "encoder=bow_glove", "tasks=[STS15]", *fast, cwd=tmp_path, here=True)
    assert second.returncode == 0, second.stderr[-2000:]
    assert set(json.loads(out.read_text())["results"]) == {"STS13", "STS14", "STS15"}  # kept, not 3 tasks -> 1
    before = out.read_text()
    other = _evaluate(senteval_root, "encoder=length", "tasks=[STS15]", *fast, cwd=tmp_path, here=True)
    assert other.returncode == 2 and "another encoder" in other.stderr and "overwrite=true" in other.stderr
    assert "Traceback" not in other.stderr and out.read_text() == before
    forced = _evaluate(senteval_root, "encoder=length", "tasks=[STS15]", "overwrite=true", *fast, cwd=tmp_path,
                       here=True)
    assert forced.returncode == 0 and set(json.loads(out.read_text())["results"]) == {"STS15"}


@pytest.mark.slow
def test_cli_text_file_as_checkpoint_is_one_line(senteval_root, tmp_path):
    fake = tmp_path / "notes.txt"
    fake.write_text("not a checkpoint\n")
    proc = _evaluate(senteval_root, f"ckpt_path={fake}", "tasks=STS13", cwd=tmp_path, here=True)
    assert proc.returncode == 2 and "not a checkpoint" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_evaluation_exits_128_plus_the_signal_with_one_line_and_keeps_its_tasks(signum, code, senteval_root,
                                                                                         tmp_path):
    out = tmp_path / "results.json"
    env = {**os.environ, "SENTENCE_DATA": str(senteval_root), "PROJECT_ROOT": str(tmp_path),
           "PYTHONPATH": str(ROOT)}
    proc = processes.start([sys.executable, str(ROOT / "evaluate.py"), "encoder=callable",
                             "encoder.function=tests.helpers.worker_jobs:slow_encode",
                             "evaluation.encode_batch_size=4", "tasks=[MR,CR,SUBJ,MPQA,TREC]", "evaluation.kfold=2",
                             "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]", f"results_file={out}"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           # as from a terminal: a background job of a non-interactive shell inherits SIGINT ignored
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out.is_file() and json.loads(out.read_text())["results"]):
        time.sleep(0.2)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"stopped by {signal.Signals(signum).name}" in line and "resume=true" in line
    assert 1 <= len(json.loads(out.read_text())["results"]) < 5


@pytest.mark.slow
def test_a_full_disk_under_the_results_file_is_one_line_and_exit_4(senteval_root, tmp_path):
    with small_filesystem(tmp_path, "1m") as small:
        out = small / "results.json"
        args = ["encoder=bow_glove", "evaluation.kfold=2", "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]",
                f"results_file={out}", f"paths.log_dir={tmp_path / 'logs'}"]
        first = _evaluate(senteval_root, *args, "tasks=[STS14]", cwd=tmp_path)
        assert first.returncode == 0, first.stderr[-2000:]
        kept = out.read_text()
        fill(small)
        done = _evaluate(senteval_root, *args, "tasks=[STS14,SICKRelatedness]", cwd=tmp_path)
        assert out.read_text() == kept  # the results written before are whole
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 4, done.stderr[-2000:]
    assert len(errors) == 1 and f"could not write {small}" in errors[0] and "No space left on device" in errors[0]
    assert "Traceback" not in done.stderr and "HYDRA_FULL_ERROR" not in done.stderr
    first_log, second_log = sorted((tmp_path / "logs").rglob("evaluate.log"))
    assert "Traceback" in second_log.read_text() and "Traceback" not in first_log.read_text()  # it went to the log


def test_cli_a_second_language_asked_of_a_one_language_encoder_is_one_line_before_anything_runs(senteval_root,
                                                                                                tmp_path):
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random",
                     "tasks=[STS13]", "sides=[fr]", f"results_file={out}", cwd=tmp_path, here=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "sides=fr: the encoder encodes en alone" in proc.stderr
    assert not out.exists()
