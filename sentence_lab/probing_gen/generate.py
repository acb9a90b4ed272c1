"""The generator's run: pass 1 (the training pipeline's preparation, then the tables), pass 2 (surface tasks + the
parse sample), parse, then the parser tasks; each task is written as soon as it is made, meta.json last."""
from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sentence_lab.probing_gen.languages import Language, language_of, parser_name, tokenizer, tokenizer_kind
from sentence_lab.probing_gen.parser import Parsed, load_parser
from sentence_lab.probing_gen.sampling import Reservoirs
from sentence_lab.probing_gen.settings import ALL_TASKS, PARSED_TASKS, TAGGED_TASKS, GenSettings
from sentence_lab.probing_gen.somo import odd_man_out
from sentence_lab.probing_gen.sources import Sources
from sentence_lab.probing_gen.stream import CorpusTables, corpus_documents, prepare_tables
from sentence_lab.probing_gen.surface import BigramShiftTask, LengthTask, WordContentTask
from sentence_lab.probing_gen.syntax import (
    PARSED_COORDINATION,
    ParsedTasks,
    coordination_candidate,
    coordination_heuristic,
    coordination_parsed,
    coordination_task,
    proper_noun_test,
)
from sentence_lab.probing_gen.writer import ProbingWriter

GENERATOR_VERSION = 3  # 3: classes balanced within each source; 2: Penn-Treebank tokens; 1: Moses


def _check(settings: GenSettings) -> list[str]:
    tasks = [str(t) for t in settings.tasks]
    unknown = [t for t in tasks if t not in ALL_TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}: choose from {list(ALL_TASKS)}")
    language_of(settings)  # an unknown language fails here, before anything is read
    for name in ("train", "dev", "test"):
        if getattr(settings, name) < 2:
            raise ValueError(f"{name}={getattr(settings, name)}: each split needs at least 2 sentences")
    if not 1 <= settings.min_tokens <= settings.max_tokens:
        raise ValueError(f"min_tokens={settings.min_tokens}, max_tokens={settings.max_tokens}: need 1 <= min <= max")
    return tasks


class _Progress:
    """A rich progress bar, or nothing (``progress=false``)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        if enabled:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=False)

    def __enter__(self):
        if self.enabled:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)

    def stage(self, description: str, total: int | None):
        if not self.enabled:
            return lambda n=1: None
        task = self.bar.add_task(description, total=total)
        return lambda n=1: self.bar.advance(task, n)


def generate(settings: GenSettings) -> dict:
    """Run the generator; returns the meta document (also written to ``<out>/meta.json``)."""
    asked = _check(settings)
    language = language_of(settings)
    tasks = [t for t in asked if language.refusal(t) is None]
    started = time.perf_counter()
    files = corpus_documents(settings.corpus, settings.max_documents, settings.corpus_format, settings.files)
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    wants_parse = [t for t in tasks if t in PARSED_TASKS + TAGGED_TASKS]
    parser = load_parser(parser_name(settings)) if wants_parse else None
    writer = ProbingWriter(out, {
        "generator": {"name": "sentence_lab.probing_gen", "version": GENERATOR_VERSION,
                      "paper": "Conneau et al. 2018, What you can cram into a single vector (section 2)"},
        "source": {"corpus": str(Path(settings.corpus).resolve()), "documents": len(files)},
        "language": language.code,
        "settings": asdict(settings),
        "tagger_parser": parser.describe() if parser else None,
        "tokenizer": tokenizer(settings).to_dict(),
    })
    for task in asked:
        refusal = language.refusal(task)
        if refusal is not None:
            writer.skip(task, refusal)
    if wants_parse and parser is None:
        for task in wants_parse:
            if task == "CoordinationInversion":
                continue  # the heuristic below stands in, named as such
            writer.skip(task, "needs a tagger/parser and parser=none")
    rng = random.Random(settings.seed)
    prepared = out / ".prepared.tmp"
    shutil.rmtree(prepared, ignore_errors=True)  # a crashed run's
    stages: dict[str, float] = {}
    try:
        _run(settings, language, tasks, files, parser, writer, rng, prepared, stages, started)
    finally:
        shutil.rmtree(prepared, ignore_errors=True)  # the prepared corpus never outlives the run, even a failed one
    stages["make_and_write_tasks"] = time.perf_counter() - started - sum(stages.values())
    meta = writer.finish(seconds=time.perf_counter() - started, stages=stages)
    if not meta["tasks"]:
        eligible = meta["source"].get("eligible_sentences", 0)
        raise ValueError(f"no task could be made from {settings.corpus}: {eligible} sentences of "
                         f"{settings.min_tokens}-{settings.max_tokens} tokens, against {settings.total} asked per "
                         f"task (train={settings.train} dev={settings.dev} test={settings.test}); "
                         f"{'; '.join(f'{t}: {r}' for t, r in meta['skipped'].items())}")
    return meta


def _run(settings: GenSettings, language: Language, tasks: list[str], files: list[Path], parser,
         writer: ProbingWriter, rng: random.Random, prepared: Path, stages: dict[str, float], started: float) -> None:
    tables: CorpusTables = prepare_tables(files, prepared, tokenizer_kind(settings), settings.lowercase,
                                          "OddManOut" in tasks and parser is not None, settings.min_tokens,
                                          settings.max_tokens, settings.workers, settings.progress,
                                          lang=language.code, corpus_format=settings.corpus_format)
    stages["pass1_tokenise_count"] = time.perf_counter() - started
    with _Progress(settings.progress) as progress:
        writer.update_source(sentences=tables.sentences, tokens=tables.tokens, eligible_sentences=tables.eligible,
                             vocabulary=len(tables.unigrams),
                             bigram_table_bytes=tables.bigrams.nbytes if tables.bigrams is not None else None)
        sources = Sources(files, Path(settings.corpus), tables.documents_per_file, settings.balance_by)
        writer.set_sources(sources)
        unit = sources.unit
        sample_unit = sources.sample_unit if sources.samples_per_unit else None
        surface: list[LengthTask | WordContentTask | BigramShiftTask] = []
        if "Length" in tasks:
            surface.append(LengthTask(settings, rng, unit, sample_unit))
        if "WordContent" in tasks:
            try:
                surface.append(WordContentTask(settings, rng, tables.unigrams, unit, sample_unit))
            except ValueError as err:
                writer.skip("WordContent", str(err))
        if "BigramShift" in tasks:
            surface.append(BigramShiftTask(settings, rng, unit))
        coordination = language.rules.coordination if language.rules is not None else None
        heuristic_coord = "CoordinationInversion" in tasks and parser is None and coordination is not None
        coord_reservoir = Reservoirs(2 * settings.total, rng) if heuristic_coord else None
        parse_sample = Reservoirs(settings.parse_sample, rng) if parser is not None else None
        coord_sample = Reservoirs(settings.parse_sample, rng) \
            if parser is not None and "CoordinationInversion" in tasks else None
        advance = progress.stage("pass 2: sample", tables.eligible)
        for doc, tokens in tables.eligible_sentences():
            for task in surface:
                task.offer(doc, tokens)
            if parse_sample is not None:
                parse_sample.offer(0, (doc, tokens))
            if coord_sample is not None and coordination is not None and coordination_candidate(tokens, coordination):
                coord_sample.offer(0, (doc, tokens))
            if coord_reservoir is not None and coordination is not None:  # heuristic_coord
                found = coordination_heuristic(tokens, settings.coord_max_length_ratio, coordination)
                if found is not None:
                    coord_reservoir.offer(0, (doc, (tokens, found, _case_test(tokens, tables.unigrams))))
            advance()
        stages["pass2_sample"] = time.perf_counter() - started - sum(stages.values())
        for task in surface:
            writer.write(task.finish())
        if coord_reservoir is not None and coordination is not None:  # heuristic_coord
            writer.write(coordination_task(
                coord_reservoir.items.get(0, []), settings, rng,
                f"heuristic (no parser): exactly one ', <{'|'.join(sorted(coordination.coordinators))}>' followed by "
                "a pronoun or determiner, and a final . ! or ?",
                approximation="surface pattern instead of a parse: some matches are not two coordinate clauses",
                unit=unit))
        if coord_sample is not None and coordination is not None:
            sample = coord_sample.items.get(0, [])
            items = []
            advance = progress.stage("parse CoordInv candidates", len(sample))
            for doc, parsed in zip((d for d, _ in sample), parser.parse((t for _, t in sample),
                                                                        workers=settings.workers)):
                found = coordination_parsed(parsed, settings.coord_max_length_ratio, coordination)
                if found is not None:
                    items.append((doc, (parsed.tokens, found,
                                        proper_noun_test(parsed.tokens, parsed.tags, coordination))))
                advance()
            writer.update_source(coordination_candidates_parsed=len(sample))
            stages["parse_coordination"] = time.perf_counter() - started - sum(stages.values())
            writer.write(coordination_task(items, settings, rng, PARSED_COORDINATION, approximation=None, unit=unit))
        if parse_sample is not None and [t for t in tasks if t in PARSED_TASKS + TAGGED_TASKS  # a parser is given
                                         if t != "CoordinationInversion"]:
            sample = parse_sample.items.get(0, [])
            assert language.rules is not None, "a language with parsed tasks has their rules"
            collect = ParsedTasks([t for t in tasks if t in PARSED_TASKS and t != "CoordinationInversion"], settings,
                                  rng, language.rules, unit)
            keep_tags = "OddManOut" in tasks
            tagged: list[tuple[int, Parsed]] = []
            advance = progress.stage(f"parse ({parser.name})", len(sample))
            for doc, parsed in zip((d for d, _ in sample), parser.parse((t for _, t in sample),
                                                                        workers=settings.workers)):
                collect.offer(parsed, doc)
                if keep_tags:
                    tagged.append((doc, Parsed(parsed.tokens, language.rules.odd_tags(parsed), [], [])))
                advance()
            writer.update_source(parsed_sentences=len(sample))
            stages["parse_sample"] = time.perf_counter() - started - sum(stages.values())
            for output in collect.finish():
                writer.write(output)
            if keep_tags:
                assert tables.bigrams is not None, "the first pass counts bigrams for OddManOut"
                writer.write(odd_man_out(tagged, tables.ids, tables.bigrams, settings, rng,
                                         language.rules.replaceable, language.rules.odd_words, unit))


def _case_test(tokens: list[str], unigrams):
    """Keep a clause-initial word capitalised when the corpus writes it so more often than lower-case."""
    return lambda i: tokens[i] == "I" or unigrams.get(tokens[i], 0) > unigrams.get(tokens[i].lower(), 0)
