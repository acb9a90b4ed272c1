"""Evaluate a sentence encoder on SentEval's tasks.

    python evaluate.py ckpt_path=<checkpoint from train.py> tasks=all
    python evaluate.py encoder=bow_glove tasks=[MR,STS14] evaluation=full
    python evaluate.py encoder=bilstm_max tasks=probing          # untrained, random init
    python evaluate.py ckpt_path=[<uni-QT run>,<bi-QT run>]      # combine-QT: vectors concatenated
    python evaluate.py tasks=probing probing=generated:<dir>     # a set made by tools.probing_gen
    python evaluate.py encoder=minilm                            # all-MiniLM-L6-v2 (requirements-minilm.txt)
    python evaluate.py encoder=precomputed encoder.path=vectors.npz   # vectors computed elsewhere
    python evaluate.py encoder=callable encoder.function=mypkg.embed:encode   # any sentences -> array function
"""
import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("PROJECT_ROOT", str(Path(__file__).resolve().parents[1]))

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402
from rich.console import Console  # noqa: E402

from sentence_lab.adapters.from_config import build_text_encoder  # noqa: E402
from sentence_lab.evaluation.results import ResultsWriter, merge_into, protocol_record, results_meta, resume_from  # noqa: E402
from sentence_lab.evaluation.runner import all_sentences, load_tasks, params_from_config, run_tasks  # noqa: E402
from sentence_lab.evaluation.tasks import UnknownTask  # noqa: E402
from sentence_lab.evaluation.text_encoders import EncoderOutputError  # noqa: E402
from sentence_lab.training.run_dir import register_resolvers  # noqa: E402

register_resolvers()


class Stopped(BaseException):  # not an Exception: no task catches it as its own failure
    """The evaluation was stopped by a signal; the tasks done are in the results file."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum: int, frame) -> None:
    raise Stopped(signum)


def evaluate(cfg: DictConfig) -> int:
    console = Console(stderr=True)
    tasks = OmegaConf.to_container(cfg.tasks) if OmegaConf.is_config(cfg.tasks) else cfg.tasks
    data_dir = Path(hydra.utils.to_absolute_path(str(cfg.paths.data_dir)))
    try:
        params = params_from_config(cfg.evaluation)
        loaded = load_tasks(tasks, data_dir, console=console, probing=str(cfg.get("probing") or "auto"))
    except (UnknownTask, TypeError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    if all(t.data is None for t in loaded):
        where = f"{data_dir} does not exist" if not data_dir.is_dir() else f"nothing under {data_dir} holds them"
        console.print(f"[red]error:[/red] no data for any requested task ({where}): set SENTENCE_DATA or "
                      "paths.data_dir to the data root (senteval/, probing/), or get it with "
                      "scripts/get_senteval_data.sh", highlight=False, soft_wrap=True)
        return 2
    if cfg.results_file:
        results_file = Path(hydra.utils.to_absolute_path(str(cfg.results_file)))
    else:
        results_file = Path(hydra.core.hydra_config.HydraConfig.get().runtime.output_dir) / "results.json"
    try:
        encoder, description = build_text_encoder(cfg, lambda: all_sentences(loaded), hydra.utils.to_absolute_path)
    except (FileNotFoundError, ValueError, ImportError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    protocol = protocol_record(params, encode_batch_size=int(cfg.evaluation.get("encode_batch_size", 128)))
    meta = results_meta("evaluate", protocol, description, [t.spec.name for t in loaded], data_dir=str(data_dir),
                        probing_source=str(cfg.get("probing") or "auto"))
    # Other writers of the same file (another evaluate.py run at the same time) keep their tasks, unless overwrite.
    writer = ResultsWriter(results_file, meta, merge_with_file=not cfg.get("overwrite"))
    writer.claim(t.spec.name for t in loaded)
    if results_file.is_file() and not cfg.get("overwrite"):
        try:
            if cfg.get("resume"):
                done = resume_from(writer, results_file)
                writer.claimed.difference_update(done)  # kept as the file has them
                for task in loaded:
                    if task.spec.name in done:
                        task.data, task.error = None, None  # kept from the file, not run again
                console.print(f"resume: {len(done)} task(s) already in {results_file}: {', '.join(done) or 'none'}",
                              highlight=False, soft_wrap=True)
            else:
                kept = merge_into(writer, results_file, [t.spec.name for t in loaded])
                console.print(f"{results_file} exists: its other {len(kept)} task(s) are kept "
                              f"({', '.join(kept) or 'none'}); the ones run now replace theirs", highlight=False,
                              soft_wrap=True)
        except ValueError as err:
            console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
            return 2
    writer.flush()
    console.print(f"results -> {results_file}", highlight=False, soft_wrap=True)
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        doc = run_tasks(loaded, encoder, params, writer, console=console,
                        encode_batch_size=int(cfg.evaluation.get("encode_batch_size", 128)))
    except Stopped as stop:  # Ctrl-C, SLURM, a sweeper: one line, the shell's exit code for the signal
        console.print(f"[red]error:[/red] stopped by {stop} after {len(writer.doc['results'])} task(s): they are in "
                      f"{results_file}; resume=true runs the others", highlight=False, soft_wrap=True)
        return 128 + stop.signum
    except EncoderOutputError as err:
        console.print(f"[red]error:[/red] {err} (results so far kept in {results_file})", highlight=False,
                      soft_wrap=True)
        return 3
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(writer.markdown_path.read_text(encoding="utf-8"))
    console.print(f"results: {results_file} and {writer.markdown_path}", highlight=False, soft_wrap=True)
    return 1 if doc.get("errors") else 0


@hydra.main(version_base="1.3", config_path=str(Path(__file__).resolve().parents[1] / "conf"), config_name="evaluate")
def main(cfg: DictConfig) -> None:
    code = evaluate(cfg)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
