"""What the project makes importable is its own: packages under ``sentence_lab`` (the ``sentence_lab/`` folder),
``senteval`` the one exception, ``hydra_plugins.sentence_lab`` where Hydra looks; a non-editable install carries the
configs, assets and commands; and a client whose own files are named ``evaluation.py``, ``text.py`` and ``tools/``
still gets our ``senteval``."""
from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from lib.fresh_environment import CLONE_VARIABLES, files_under, fresh_environment_with
from sentence_lab.cli.project_root import MARKER, clone_root
from tests.helpers import processes

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (requires-python): tomllib's own code, the package tomli, which pytest depends on there
    import tomli as tomllib

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FOLDERS = ["text", "encoders", "objectives", "datamodules", "checkpoints", "training", "runs", "tasks", "evaluation",
           "adapters", "reporting", "probing_gen", "cli"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    tree = tmp / "src"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "logs", "build", "*.egg-info",
                                                               "__pycache__", "tests", "benchmarks", "docs", ".cache"))
    proc = processes.run([sys.executable, "-m", "pip", "wheel", "-q", ".", "--no-deps", "--no-build-isolation",
                           "-w", str(tmp / "dist")], cwd=tree, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (found,) = (tmp / "dist").glob("*.whl")
    return found


def test_every_package_folder_is_listed():
    """A package missing from pyproject's list would be left out of the wheel without a word."""
    on_disk = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "sentence_lab").rglob("__init__.py")}
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert {p.replace("/", ".") for p in on_disk} <= listed, sorted({p.replace("/", ".") for p in on_disk} - listed)
    assert {f.name for f in (ROOT / "sentence_lab").iterdir() if (f / "__init__.py").is_file()} == set(FOLDERS)
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"sentence_lab.conf": "conf",
                                                                "sentence_lab.assets": "assets"}


def test_the_wheel_holds_only_its_own_names_and_its_configs_assets_and_commands(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"sentence_lab", "senteval", "hydra_plugins"}
    assert {f"sentence_lab/{f}/__init__.py" for f in FOLDERS} | {"senteval/__init__.py"} <= names
    assert "hydra_plugins/sentence_lab/joblib_launcher.py" in names
    configs = {f"sentence_lab/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "conf").rglob("*.yaml")}
    assets = {f"sentence_lab/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assert configs <= names and assets <= names, sorted((configs | assets) - names)[:5]
    entry_points = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for command in ("sentence-lab-train = sentence_lab.cli.train:main",
                    "sentence-lab-eval = sentence_lab.cli.evaluate:main",
                    "sentence-lab-report = sentence_lab.cli.report:main",
                    "sentence-lab-probing-gen = sentence_lab.probing_gen.__main__:main"):
        assert command in entry_points


def test_the_installed_wheel_sits_beside_packages_named_evaluate_and_adapters(wheel, tmp_path):
    """Hugging Face's ``evaluate`` and AdapterHub's ``adapters`` (stand-ins of the same names here: no network)
    installed beside ours: each side imports its own."""
    site = tmp_path / "site"
    proc = processes.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("evaluate", "adapters", "train", "tools", "text"):
        assert not (site / name).exists() and not (site / f"{name}.py").exists()
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"WHO = 'the other {name}'\n")
    code = ("import evaluate, adapters, senteval, sentence_lab.tasks, sentence_lab.cli.evaluate\n"
            "assert evaluate.WHO == 'the other evaluate' and adapters.WHO == 'the other adapters'\n"
            "import sentence_lab.adapters.trained\n"
            f"assert sentence_lab.tasks.__file__.startswith({str(site)!r})\n"
            "print('ok')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = processes.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]



NEIGHBOURS = os.environ.get("SENTENCE_LAB_NEIGHBOURS_PYTHON")
BOTH_SIDES = """
import sys
import torch
import transformers
import adapters, evaluate, senteval, sentence_lab.cli.evaluate, sentence_lab.tasks
site = sys.prefix
for module in (adapters, evaluate, senteval, sentence_lab.tasks):
    assert module.__file__.startswith(site), module.__file__
assert issubclass(evaluate.EvaluationModule, object) and callable(evaluate.load)
bert = transformers.BertModel(transformers.BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                      intermediate_size=32, vocab_size=50))
before = sum(p.numel() for p in bert.parameters())
adapters.init(bert)
bert.add_adapter("probe", config="seq_bn")
assert sum(p.numel() for p in bert.parameters()) > before
se = senteval.engine.SE({"task_path": sys.argv[1], "usepytorch": True, "kfold": 2,
                         "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 2, "epoch_size": 1}},
                        lambda params, batch: torch.randn(len(batch), 8).numpy() + [[len(s)] for s in batch],
                        lambda params, samples: None)
print("MR", se.eval(["MR"])["MR"]["acc"])
"""


@pytest.mark.skipif(not NEIGHBOURS, reason="SENTENCE_LAB_NEIGHBOURS_PYTHON unset: .ci/run makes that environment "
                    "(this wheel with requirements-neighbours.txt)")
def test_the_wheel_beside_the_real_evaluate_and_adapters(senteval_root, tmp_path):
    """In a fresh environment holding this checkout's wheel, Hugging Face's ``evaluate`` 0.4 and AdapterHub's
    ``adapters`` 1.3 (with the transformers 4 it pins), each side imports its own package and works: an adapter
    added to a small BERT, our ``senteval`` scoring MR."""
    task_path = tmp_path / "data"
    (task_path / "downstream").mkdir(parents=True)
    (task_path / "downstream" / "MR").symlink_to(senteval_root / "senteval" / "MR")
    script = tmp_path / "both_sides.py"
    script.write_text(BOTH_SIDES)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = processes.run([NEIGHBOURS, "-I", str(script), str(task_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("MR ")

CLIENT = '''"""A SentEval client named evaluation.py, as SimCSE's is."""
import sys

import numpy as np

import senteval
import text  # the client's own text.py and tools/ come first on its path
import tools

assert text.MINE and tools.MINE


def prepare(params, samples):
    return None


def batcher(params, batch):
    rng = np.random.default_rng(0)
    return np.stack([rng.standard_normal(8) + len(s) for s in batch])


se = senteval.engine.SE({"task_path": sys.argv[1], "usepytorch": True, "kfold": 2,
                         "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 2, "epoch_size": 1}},
                        batcher, prepare)
print("MR", se.eval(["MR"])["MR"]["acc"])
'''


def test_a_client_named_evaluation_py_beside_text_py_and_tools_gets_our_senteval(senteval_root, tmp_path):
    client = tmp_path / "client"
    (client / "tools").mkdir(parents=True)
    (client / "tools" / "__init__.py").write_text("MINE = True\n")
    (client / "text.py").write_text("MINE = True\n")
    (client / "evaluation.py").write_text(CLIENT)
    task_path = tmp_path / "data"  # SentEval's layout: <task_path>/downstream/MR
    (task_path / "downstream").mkdir(parents=True)
    (task_path / "downstream" / "MR").symlink_to(senteval_root / "senteval" / "MR")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = processes.run([sys.executable, "evaluation.py", str(task_path)], cwd=client, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("MR ")


def test_installed_commands_write_where_they_are_run_not_into_site_packages(wheel, tmp_path):
    site = fresh_environment_with(wheel, tmp_path / "env")
    bin_dir = tmp_path / "env" / "bin"
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLONE_VARIABLES}
    env["OMP_NUM_THREADS"] = "1"
    before = files_under(site)
    train = processes.run([str(bin_dir / "sentence-lab-train"), "encoder=bow", "encoder.embed_dim=16",
                            "encoder.embedding_init=random", "trainer.max_steps=2", "~callbacks.eval_suite",
                            "logger=none", "print_config=false", "test_after_fit=false"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr[-3000:]
    # torch's path of the probe: an installed copy's fused kernels would compile first (30 s), not what is tested here
    evaluate = processes.run([str(bin_dir / "sentence-lab-eval"), "encoder=bow_glove", "tasks=[Length]",
                              "evaluation.fused_kernels=false"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert evaluate.returncode == 0, evaluate.stderr[-3000:]
    assert files_under(site) == before  # nothing written inside the environment
    written = files_under(work)
    (run,) = {Path(p).parts[3] for p in written if p.startswith("logs/train/runs/")}
    assert f"logs/train/runs/{run}/checkpoints/last.ckpt" in written  # the run, under the directory it ran in
    assert any(p.startswith(".cache/corpus/") for p in written)  # the shipped books, prepared here
    assert any(p.startswith("logs/evaluate/") and p.endswith("results.json") for p in written)
    assert {Path(p).parts[0] for p in written} == {"logs", ".cache"}


def test_a_clone_is_found_by_its_marker_and_an_installed_copy_never_is(tmp_path):
    assert clone_root() == ROOT and (ROOT / MARKER).is_file()
    clone = tmp_path / "clone"
    (clone / "cli").mkdir(parents=True)
    (clone / MARKER).write_text("")
    assert clone_root(clone / "cli" / "train.py") == clone
    inside = clone / ".venv" / "lib" / "python3.11" / "site-packages" / "sentence_lab" / "cli" / "train.py"
    assert clone_root(inside) is None  # installed into a virtual environment inside a clone: still installed
    assert clone_root(tmp_path / "elsewhere" / "cli" / "train.py") is None
