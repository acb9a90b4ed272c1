"""Evaluate a sentence encoder on SentEval's tasks.

    python evaluate.py ckpt_path=<checkpoint from train.py> tasks=all
    python evaluate.py encoder=bow_glove tasks=[MR,STS14] evaluation=full
    python evaluate.py encoder=bilstm_max tasks=probing          # untrained, random init
    python evaluate.py ckpt_path=[<uni-QT run>,<bi-QT run>]      # combine-QT: vectors concatenated
    python evaluate.py tasks=probing probing=generated:<dir>     # a set made by sentence_lab.probing_gen
    python evaluate.py encoder=minilm                            # all-MiniLM-L6-v2 (the sentence-transformers extra)
    python evaluate.py encoder=precomputed encoder.path=vectors.npz   # vectors computed elsewhere
    python evaluate.py encoder=callable encoder.function=mypkg.embed:encode   # any sentences -> array function
    python evaluate.py ckpt_path=<J_bi run> side_probing=generated:<French set>   # both languages, and retrieval
"""
import sys
from pathlib import Path

from sentence_lab.cli.project_root import set_project_root
from sentence_lab.home import CONF

set_project_root()

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig  # noqa: E402
from rich.console import Console  # noqa: E402

from sentence_lab.adapters.from_config import build_text_encoder  # noqa: E402
from sentence_lab.cli.imported_objects import freeze_imported_objects  # noqa: E402
from sentence_lab.evaluation.encoders.text_encoders import EncoderOutputError  # noqa: E402
from sentence_lab.evaluation.languages.sides import NoSuchSide  # noqa: E402
from sentence_lab.evaluation.results import markdown_table, read_results  # noqa: E402
from sentence_lab.evaluation.suite import EvaluationSuite, IncompatibleResultsFile, OnExisting  # noqa: E402
from sentence_lab.runs.errors import write_traceback_to_logs  # noqa: E402
from sentence_lab.runs.run_dir import register_resolvers  # noqa: E402
from sentence_lab.stop_signals import Stopped, stops_raise  # noqa: E402
from sentence_lab.tasks import UnknownTask  # noqa: E402
from sentence_lab.text.files import EXIT_WRITE_FAILED, OutputWriteError  # noqa: E402

register_resolvers()


def _on_existing(cfg: DictConfig) -> OnExisting:
    """``overwrite=true`` replaces the results file, ``resume=true`` keeps its finished tasks, else it is merged."""
    if cfg.get("overwrite"):
        return "overwrite"
    return "resume" if cfg.get("resume") else "merge"


def _tasks_written(results_file: Path) -> int:
    """How many task results ``results_file`` holds (0 when there is none yet)."""
    try:
        return len(read_results(results_file)["results"])
    except ValueError:
        return 0


def _log_traceback(err: BaseException) -> str:
    """The traceback into the run's log, if that can be written; where it went, for the error line."""
    try:
        files = write_traceback_to_logs(err)
    except OSError:
        return ""
    return f" (traceback in {files[0]})" if files else ""


def evaluate(cfg: DictConfig) -> int:
    console = Console(stderr=True)
    data_dir = Path(hydra.utils.to_absolute_path(str(cfg.paths.data_dir)))
    try:
        suite = EvaluationSuite.from_config(cfg, cfg.evaluation, data_dir, console=console)
    except (UnknownTask, TypeError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    if not suite.has_data:
        where = f"{data_dir} does not exist" if not data_dir.is_dir() else f"nothing under {data_dir} holds them"
        console.print(f"[red]error:[/red] no data for any requested task ({where}): set SENTENCE_DATA or "
                      "paths.data_dir to the data root (senteval/, probing/), or get it with "
                      "scripts/get_senteval_data.sh", highlight=False, soft_wrap=True)
        return 2
    if cfg.results_file:
        results_file = Path(hydra.utils.to_absolute_path(str(cfg.results_file)))
    else:
        results_file = Path(HydraConfig.get().runtime.output_dir) / "results.json"
    try:
        encoder, description = build_text_encoder(cfg, suite.sentences, hydra.utils.to_absolute_path)
    except (FileNotFoundError, ValueError, ImportError) as err:
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    try:
        with stops_raise():  # Stopped is no Exception: no task records it as its own failure
            doc = suite.run(encoder, results_file, kind="evaluate", encoder_description=description,
                            on_existing=_on_existing(cfg), console=console)
    except (IncompatibleResultsFile, NoSuchSide) as err:  # nothing written: the file stays as it was
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        return 2
    except Stopped as stop:  # Ctrl-C, SLURM, a sweeper: one line, the shell's exit code for the signal
        done = _tasks_written(results_file)
        kept = f"they are in {results_file}; resume=true runs the others" if done else "run the command again"
        console.print(f"[red]error:[/red] stopped by {stop} after {done} task(s): {kept}", highlight=False,
                      soft_wrap=True)
        return stop.exit_code
    except EncoderOutputError as err:
        console.print(f"[red]error:[/red] {err} (results so far kept in {results_file})", highlight=False,
                      soft_wrap=True)
        return 3
    except OutputWriteError as err:  # a full disk, a read-only folder: the results written before are whole
        where = _log_traceback(err)
        console.print(f"[red]error:[/red] {err}{where}", highlight=False, soft_wrap=True)
        return EXIT_WRITE_FAILED
    print(markdown_table(doc))
    console.print(f"results: {results_file} and {results_file.with_suffix('.md')}", highlight=False, soft_wrap=True)
    return 1 if doc.get("errors") else 0


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="evaluate")
def evaluate_job(cfg: DictConfig) -> None:
    code = evaluate(cfg)
    if code:
        sys.exit(code)


def main() -> None:
    """The command line: Hydra composes the config, ``evaluate`` runs it."""
    freeze_imported_objects()
    evaluate_job()


if __name__ == "__main__":
    main()
