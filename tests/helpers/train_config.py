"""Compose the training config for tests, as ``train.py`` would."""
from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, open_dict

ROOT = Path(__file__).resolve().parents[2]


def _compose(overrides: list[str], out: Path) -> DictConfig:
    # The per-epoch evaluation suite is on by default and would read the real tasks (CI sets SENTENCE_DATA):
    # off unless a test configures it.
    selects_callbacks = [o for o in overrides if o.startswith("callbacks=")]
    suite_absent = bool(selects_callbacks) and "default" not in selects_callbacks[-1]
    if not suite_absent and not any(o.startswith(("callbacks.eval_suite", "~callbacks.eval_suite", "debug="))
                                    for o in overrides):
        overrides = ["~callbacks.eval_suite", *overrides]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.output_dir = str(out)
        del cfg.hydra
    return cfg


def compose_default_cfg(out: Path, overrides: list[str]) -> DictConfig:
    """The default run's config (``python train.py``: the shipped books), writing to ``out``."""
    return _compose(overrides, out)


def compose_train_cfg(tiny_corpus: Path, out: Path, overrides: list[str]) -> DictConfig:
    """The ``train`` config on a fixture corpus, writing to ``out``, as ``train.py`` would compose it."""
    base = [f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
            f"paths.cache_dir={out / 'cache'}", "data.batch_size=8", "data.preprocess_workers=0"]
    return _compose(base + overrides, out)


def compose_any_cfg(tiny_corpus: Path, out: Path, overrides: list[str]) -> DictConfig:
    """Like ``compose_train_cfg`` when the composed data is the ordered corpus; pair data as configured."""
    cfg = _compose([f"paths.cache_dir={out / 'cache'}", *overrides], out)
    if str(cfg.data._target_).endswith("OrderedCorpusDataModule"):
        return compose_train_cfg(tiny_corpus, out, overrides)
    return cfg


def pair_data_overrides(objective: str, tiny_pairs: dict[str, Path]) -> list[str]:
    """Point an objective's default pair data at the fixture files."""
    if objective == "nli":
        snli = tiny_pairs["snli"]
        return [f"data.train.path={tiny_pairs['nli']}", f"data.valid.path={snli}", f"data.test.snli_test.path={snli}",
                "~data.test.mnli_dev", "~data.test.xnli_en_test"]
    if objective in ("nmt", "jbi"):
        return ["data=tatoeba_en_es", f"data.train.path={tiny_pairs['parallel']}", "data.valid_size=16",
                "data.retrieval_held_out=8",  # of the tiny file's 80 pairs with both sides unique
                "data.target_tokenizer.lang=en"]
    return ["data=pairs", f"data.train.path={tiny_pairs['paraphrases']}", "data.valid_size=16"]


def compose_objective_cfg(objective: str, tiny_corpus: Path, tiny_pairs: dict[str, Path], out: Path,
                          overrides: list[str]) -> DictConfig:
    """``objective=<name>`` on the fixture data its default data config reads, as ``train.py`` would compose it."""
    base = [f"objective={objective}", f"paths.cache_dir={out / 'cache'}", "data.batch_size=8"]
    if objective in ("qt", "skipthought", "autoencoder", "simcse"):
        base += [f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
                 "data.preprocess_workers=0"]
    else:
        base += pair_data_overrides(objective, tiny_pairs)
    return _compose(base + overrides, out)


def is_text_encoder_config(name: str) -> bool:
    """An encoder config that is not a trainable ``encoders.*`` module: bow_glove, length, NB baselines,
    sentence-transformers, precomputed vectors, callables (evaluation-only)."""
    import yaml

    conf = Path(__file__).resolve().parents[2] / "conf" / "encoder"
    data = yaml.safe_load((conf / f"{name}.yaml").read_text()) or {}
    target = data.get("_target_")
    if target is None:  # a config that extends another (minilm -> sentence_transformers)
        parents = [d for d in data.get("defaults", []) if isinstance(d, str) and d != "_self_"]
        return bool(parents) and is_text_encoder_config(parents[0])
    return not str(target).startswith("sentence_lab.encoders.")


def sweep_command(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, tasks: str, *overrides: str) -> list[str]:
    """``python train.py`` as a sweep on the fixtures: a small bow encoder, the tiny corpus, the callback on
    ``tasks`` with a fast protocol, the sweep written to ``tmp_path / "sweep"``."""
    import sys

    root = Path(__file__).resolve().parents[2]
    return [sys.executable, str(root / "train.py"), *overrides, "encoder.embed_dim=16", "encoder.embedding_init=random",
            "trainer.val_check_interval=1.0", "print_config=false",
            f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
            f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
            f"callbacks.eval_suite.data_dir={senteval_root}", f"callbacks.eval_suite.tasks={tasks}",
            "callbacks.eval_suite.params.l2_grid=[1e-3]", "callbacks.eval_suite.params.max_epoch=4"]
