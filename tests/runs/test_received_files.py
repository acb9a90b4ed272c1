"""What a researcher receives runs no code: crafted checkpoints and run folders under evaluate.py, resume=true, the
weights hash and checkpoint choice; a copied run folder keeps working, its recorded paths followed only inside it."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

from sentence_lab.checkpoints.choice import resolve_checkpoint
from sentence_lab.checkpoints.weights_hash import weights_hash
from sentence_lab.runs.run import fit
from sentence_lab.text.refused_files import RefusedFile
from tests.helpers.hostile_files import copy_run, with_payload
from tests.helpers.in_process import run_main
from tests.helpers.train_config import compose_train_cfg

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "encoder=bow",
         "encoder.embed_dim=8", "encoder.embedding_init=random", "trainer.max_epochs=1"]


@pytest.fixture(scope="module")
def run(tiny_corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sender") / "run"
    fit(compose_train_cfg(tiny_corpus, out, QUIET))
    (out / ".hydra").mkdir(exist_ok=True)  # a train.py run directory, as Hydra leaves it
    return out


def _command(script: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PROJECT_ROOT=str(ROOT))
    env.pop("SENTENCE_DATA", None)
    return run_main(script, list(overrides), cwd=cwd, env=env, timeout=300)


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


def test_evaluate_refuses_a_payload_checkpoint_as_a_file_and_as_a_folders_last_ckpt(run, tmp_path):
    marker = tmp_path / "ran"
    gift = with_payload(run / "checkpoints" / "best.ckpt", tmp_path / "gift.ckpt", marker)
    folder = copy_run(run, tmp_path / "folder")
    (folder / "checkpoints" / "best.ckpt").unlink()  # the folder's last.ckpt is read to choose a checkpoint
    with_payload(run / "checkpoints" / "last.ckpt", folder / "checkpoints" / "last.ckpt", marker)
    for target, named in ((gift, "gift.ckpt"), (folder, "last.ckpt")):
        done = _command("evaluate.py", f"ckpt_path={target}", "tasks=probing", "probing=generated",
                        f"paths.data_dir={tmp_path / 'no-data'}", f"results_file={tmp_path / 'out' / 'results.json'}",
                        cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        line = _error_line(done.stderr)
        assert named in line and "refused: it holds getattr, which is code" in line
        assert not marker.exists() and not (tmp_path / "out").exists()


def test_resume_into_a_received_folder_with_a_payload_runs_nothing(run, tiny_corpus, tmp_path):
    marker = tmp_path / "ran"
    folder = copy_run(run, tmp_path / "folder")
    with_payload(run / "checkpoints" / "last.ckpt", folder / "checkpoints" / "last.ckpt", marker)
    done = _command("train.py", "resume=true", f"hydra.run.dir={folder}", *QUIET, "~callbacks.eval_suite",
                    f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
                    f"paths.cache_dir={tmp_path / 'cache'}", "data.batch_size=8", "data.preprocess_workers=0",
                    cwd=tmp_path)
    assert done.returncode == 1
    assert "last.ckpt: refused: it holds getattr" in _error_line(done.stderr)
    assert not marker.exists() and not (folder / "checkpoints" / "interrupted.ckpt").exists()


def test_the_weights_hash_refuses_a_payload(run, tmp_path):
    marker = tmp_path / "ran"
    gift = with_payload(run / "checkpoints" / "last.ckpt", tmp_path / "gift.ckpt", marker)
    with pytest.raises(RefusedFile):
        weights_hash(gift)
    assert not marker.exists()


def test_a_recorded_best_path_is_followed_only_inside_the_folder(run, tmp_path):
    folder = copy_run(run, tmp_path / "folder")
    (folder / "checkpoints" / "best.ckpt").unlink()
    outside = tmp_path / "elsewhere" / "epoch_9.ckpt"
    outside.parent.mkdir()
    outside.write_bytes((run / "checkpoints" / "init.ckpt").read_bytes())
    last = folder / "checkpoints" / "last.ckpt"
    state = torch.load(last, weights_only=True)
    key = next(k for k in state["callbacks"] if k.startswith("ModelCheckpoint"))
    state["callbacks"][key]["best_model_path"] = str(outside)
    torch.save(state, last)
    assert resolve_checkpoint(folder) == last  # not the file outside
    (folder / "checkpoints" / "epoch_9.ckpt").write_bytes(outside.read_bytes())
    assert resolve_checkpoint(folder) == folder / "checkpoints" / "epoch_9.ckpt"  # found by name in the folder


def test_a_copied_run_folder_resumes_with_its_best_kept_in_the_copy(run, tiny_corpus, tmp_path):
    folder = copy_run(run, tmp_path / "moved" / "run")
    cfg = compose_train_cfg(tiny_corpus, folder, [*QUIET[:-1], "trainer.max_epochs=2",
                                                 f"ckpt_path={folder / 'checkpoints' / 'last.ckpt'}"])
    trainer, _ = fit(cfg)
    callback = trainer.checkpoint_callback
    assert callback is not None and Path(callback.best_model_path).parent == folder / "checkpoints"
    assert callback.best_model_score is not None and trainer.current_epoch == 2
    assert not any(str(run) in str(p) for p in callback.best_k_models)
