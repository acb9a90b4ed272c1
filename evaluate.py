"""Evaluate a sentence encoder on SentEval's tasks.

    python evaluate.py ckpt_path=<checkpoint from train.py> tasks=all
    python evaluate.py encoder=bow_glove tasks=[MR,STS14] evaluation=full
    python evaluate.py encoder=bilstm_max tasks=probing          # untrained, random init
    python evaluate.py ckpt_path=[<uni-QT run>,<bi-QT run>]      # combine-QT: vectors concatenated
    python evaluate.py tasks=probing probing=generated:<dir>     # a set made by evaluation.probing_gen
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("PROJECT_ROOT", str(Path(__file__).resolve().parent))

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402


def load_checkpoint_encoder(ckpt_path: str, vocab_expansion: bool):
    """(model, description) of a checkpoint or run directory (its best.ckpt)."""
    from objectives.module import SentenceModel
    from training.checkpoints import resolve_checkpoint

    path = resolve_checkpoint(hydra.utils.to_absolute_path(str(ckpt_path)))
    model = SentenceModel.load_checkpoint(str(path), map_location="cpu").eval()
    if vocab_expansion:
        skipped = model.expand_vocabulary().get("skipped")
        if skipped:  # e.g. a toy vocabulary: evaluated without expansion, recorded in describe()
            print(f"warning: vocabulary expansion skipped: {skipped}", file=sys.stderr)
    return model, {"name": f"checkpoint:{path.parent.parent.name}/{path.stem}", **model.describe(),
                   "source": f"checkpoint {path}"}


def build_encoder(cfg: DictConfig, sentences_fn):
    """(encoder, description). ``sentences_fn()`` gives the tasks' sentences (for an untrained vocabulary).
    ``ckpt_path=[a,b]`` concatenates several checkpoints' vectors (combine-QT)."""
    if OmegaConf.is_list(cfg.ckpt_path) or isinstance(cfg.ckpt_path, (list, tuple)):
        from evaluation.text_encoders import Concatenation

        loaded = [load_checkpoint_encoder(p, cfg.get("vocab_expansion", True)) for p in cfg.ckpt_path]
        combined = Concatenation([m for m, _ in loaded], [d for _, d in loaded])
        return combined, {**combined.describe(), "source": "concatenated checkpoints"}
    if cfg.ckpt_path:
        return load_checkpoint_encoder(cfg.ckpt_path, cfg.get("vocab_expansion", True))
    target = cfg.encoder.get("_target_")
    if not target:
        raise ValueError("encoder config has no _target_: pick one of conf/encoder/*.yaml, e.g. encoder=bow_glove")
    import torch

    cls = hydra.utils.get_class(target)
    if not issubclass(cls, torch.nn.Module):  # a text encoder (encode/describe), e.g. bow_glove
        encoder = hydra.utils.instantiate(cfg.encoder)
        return encoder, {**encoder.describe(), "source": "text encoder (no checkpoint)"}
    from text import Tokenizer, Vocab
    from objectives.module import untrained_model

    tokenizer = Tokenizer(**OmegaConf.to_container(cfg.tokenizer))
    sentences = sentences_fn()
    vocab = Vocab.from_sentences(tokenizer(s) for s in sentences)
    model = untrained_model(cfg.encoder, vocab, tokenizer, seed=int(cfg.seed)).eval()
    return model, {"name": f"{target.rsplit('.', 1)[-1]}-untrained", **model.describe(), "source": "untrained",
                   "untrained": f"random init (seed {cfg.seed}); vocabulary of {len(vocab)} words built from the "
                                f"{len(sentences)} distinct sentences of the requested tasks, tokenizer "
                                f"{tokenizer.to_dict()}",
                   "encoder_config": OmegaConf.to_container(cfg.encoder, resolve=True)}


def evaluate(cfg: DictConfig) -> int:
    from rich.console import Console

    from evaluation.results import ResultsWriter
    from evaluation.runner import (all_sentences, git_revision, library_versions, load_tasks, params_from_config,
                                   run_tasks)
    from evaluation.tasks import UnknownTask
    from evaluation.text_encoders import EncoderOutputError

    console = Console(stderr=True)
    tasks = OmegaConf.to_container(cfg.tasks) if OmegaConf.is_config(cfg.tasks) else cfg.tasks
    data_dir = Path(hydra.utils.to_absolute_path(str(cfg.paths.data_dir)))
    try:
        params = params_from_config(cfg.evaluation)
        loaded = load_tasks(tasks, data_dir, console=console, probing=str(cfg.get("probing") or "auto"))
    except (UnknownTask, TypeError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    if cfg.results_file:
        results_file = Path(hydra.utils.to_absolute_path(str(cfg.results_file)))
    else:
        results_file = Path(hydra.core.hydra_config.HydraConfig.get().runtime.output_dir) / "results.json"
    try:
        encoder, description = build_encoder(cfg, lambda: all_sentences(loaded))
    except (FileNotFoundError, ValueError, ImportError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    import dataclasses

    meta = {"protocol": {**dataclasses.asdict(params),
                         "encode_batch_size": int(cfg.evaluation.get("encode_batch_size", 128))},
            "encoder": description, "tasks": [t.spec.name for t in loaded], "data_dir": str(data_dir),
            "probing_source": str(cfg.get("probing") or "auto"),
            "versions": library_versions(), "git_revision": git_revision()}
    writer = ResultsWriter(results_file, meta)
    writer.flush()
    console.print(f"results -> {results_file}", highlight=False, soft_wrap=True)
    try:
        doc = run_tasks(loaded, encoder, params, writer, console=console,
                        encode_batch_size=int(cfg.evaluation.get("encode_batch_size", 128)))
    except EncoderOutputError as err:
        console.print(f"[red]error:[/red] {err} (results so far kept in {results_file})", highlight=False,
                      soft_wrap=True)
        return 3
    print(writer.markdown_path.read_text(encoding="utf-8"))
    console.print(f"results: {results_file} and {writer.markdown_path}", highlight=False, soft_wrap=True)
    return 1 if doc.get("errors") else 0


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    code = evaluate(cfg)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
