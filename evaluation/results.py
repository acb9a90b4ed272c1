"""Results on disk: JSON and a Markdown table of main scores, both written atomically."""
from __future__ import annotations

import json
import math
from pathlib import Path

from text.files import atomic_write_text


def to_jsonable(value):
    """numpy scalars/arrays to Python; NaN/inf to None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) > 1.5 else f"{value:.4f}"
    return str(value)


def markdown_table(doc: dict) -> str:
    encoder = doc.get("encoder", {}).get("name", "?")
    protocol = doc.get("protocol", {}).get("name", "?")
    lines = [f"SentEval results: encoder `{encoder}`, protocol `{protocol}`", "",
             "| task | main score | metric | extra | n | seconds (encode + classifier) |",
             "|---|---|---|---|---|---|"]
    for task, r in doc.get("results", {}).items():
        extra = ""
        if "f1" in r:
            extra = f"f1 {_fmt(r['f1'])}"
        elif "spearman" in r and not isinstance(r["spearman"], dict):
            extra = f"spearman {_fmt(r['spearman'])}"
        elif isinstance(r.get("all"), dict) and isinstance(r["all"].get("spearman"), dict):
            extra = f"spearman mean {_fmt(r['all']['spearman'].get('mean'))}"
        secs = f"{r.get('seconds', 0):.1f} ({r.get('encode_seconds', 0):.1f} + {r.get('classifier_seconds', 0):.1f})"
        score = _fmt(r.get("main_score")) + (f" ± {_fmt(r['main_score_sd'])}" if "main_score_sd" in r else "")
        lines.append(f"| {task} | {score} | {r.get('main_metric', '')} | {extra} | "
                     f"{r.get('n', '')} | {secs} |")
    for task, message in doc.get("skipped", {}).items():
        lines.append(f"| {task} | skipped | | {message.split(':', 1)[-1].strip()[:80]} | | |")
    for task, message in doc.get("errors", {}).items():
        lines.append(f"| {task} | error | | {message[:80]} | | |")
    return "\n".join(lines) + "\n"


class ResultsWriter:
    """Holds the results document and rewrites the JSON and Markdown files after every change."""

    def __init__(self, path: Path | str, meta: dict) -> None:
        self.path = Path(path)
        self.markdown_path = self.path.with_suffix(".md")
        self.doc: dict = {"results": {}, "skipped": {}, "errors": {}, **meta}

    def add_result(self, task: str, result: dict) -> None:
        self.doc["results"][task] = result
        self.flush()

    def add_skipped(self, task: str, message: str) -> None:
        self.doc["skipped"][task] = message
        self.flush()

    def add_error(self, task: str, message: str) -> None:
        self.doc["errors"][task] = message
        self.flush()

    def update(self, **fields) -> None:
        self.doc.update(fields)
        self.flush()

    def flush(self) -> None:
        atomic_write_text(self.path, json.dumps(to_jsonable(self.doc), indent=2) + "\n")
        atomic_write_text(self.markdown_path, markdown_table(self.doc))


RESUME_KEYS = ("protocol", "encoder", "probing_source")


def _read_compatible(writer: ResultsWriter, path: Path, setting: str) -> dict:
    """The results document at ``path``, refused (ValueError, one line) when unreadable or written with another
    encoder, protocol or probing source, so runs never mix."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{setting}: cannot read {path} ({err}): use another results_file, or overwrite=true to "
                         "replace it") from None
    new = to_jsonable({k: writer.doc.get(k) for k in RESUME_KEYS})
    for key in RESUME_KEYS:
        a, b = old.get(key), new.get(key)
        if key == "encoder":  # descriptions may carry paths and versions; the name decides
            a, b = (a or {}).get("name"), (b or {}).get("name")
        if key == "protocol":
            a = {k: v for k, v in (a or {}).items() if k != "device"}
            b = {k: v for k, v in (b or {}).items() if k != "device"}
        if a != b:
            raise ValueError(f"{setting}: {path} was written with another {key} ({a!r}, now {b!r}): use another "
                             "results_file, or overwrite=true to replace it")
    return old


def resume_from(writer: ResultsWriter, path: Path) -> list[str]:
    """Take the finished tasks of an earlier run of the same evaluation into ``writer``; returns their names.
    A file written with another encoder or protocol is refused (one line), so runs never mix."""
    old = _read_compatible(writer, path, "resume=true")
    done = list(old.get("results", {}))
    writer.doc["results"].update(old.get("results", {}))
    writer.doc["resumed"] = {"from": str(path), "tasks_kept": done}
    return done


def merge_into(writer: ResultsWriter, path: Path, running: list[str]) -> list[str]:
    """An existing results file of the same encoder and protocol is kept: its tasks that are not run again stay in
    ``writer`` (the ones in ``running`` are replaced when they finish). Returns the tasks kept; refuses (one line)
    a file of another encoder or protocol."""
    old = _read_compatible(writer, path, f"results_file={path} exists")
    kept = {task: result for task, result in old.get("results", {}).items() if task not in running}
    writer.doc["results"].update(kept)
    for section in ("skipped", "errors"):
        writer.doc[section].update({t: m for t, m in old.get(section, {}).items() if t not in running})
    writer.doc["merged"] = {"from": str(path), "tasks_kept": list(kept)}
    return list(kept)
