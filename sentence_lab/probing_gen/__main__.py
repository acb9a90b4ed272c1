"""``python -m sentence_lab.probing_gen corpus=<dir or file> out=<dir> [key=value ...]``
(settings: ``settings.py``)."""
from __future__ import annotations

import sys

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sentence_lab.probing_gen.generate import generate
from sentence_lab.probing_gen.parser import ParserUnavailable
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.text.files import EXIT_WRITE_FAILED, write_failure

USAGE = ("usage: python -m sentence_lab.probing_gen corpus=<dir or file> out=<dir> [tasks=[Length,BigramShift]] "
         "[train=100000 dev=10000 test=10000] [language=en|fr|de|...] [corpus_format=documents|lines] "
         "[files=<glob>] [parser=auto|none|<spaCy pipeline>] [parse_sample=300000] "
         "[workers=2] [seed=1111]")


RAW_SETTINGS = ("corpus", "out", "files")


def parse_settings(argv: list[str]):
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise ValueError(f"{bad[0]!r} is not a key=value setting; {USAGE}")
    schema = OmegaConf.structured(GenSettings)
    # Paths and globs are taken as written (``files=**/*.fr*`` is no YAML alias), the rest read as YAML values.
    raw = {key: value for key, _, value in (a.partition("=") for a in argv) if key in RAW_SETTINGS}
    try:
        given = OmegaConf.from_dotlist([a for a in argv if a.partition("=")[0] not in RAW_SETTINGS])
        merged = OmegaConf.merge(schema, given, OmegaConf.create(raw))
        missing = sorted(OmegaConf.missing_keys(merged))
        if missing:
            raise ValueError(f"missing setting(s) {', '.join(missing)}; {USAGE}")
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        first = str(err).splitlines()[0]
        raise ValueError(f"{first}; valid settings: {', '.join(schema.keys())}") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    try:
        settings = parse_settings(argv)
        meta = generate(settings)
    except (ValueError, FileNotFoundError, ParserUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a read-only folder: one line, the task files written before are whole
        failure = write_failure(err, settings.out)
        if failure is None:
            raise
        print(f"error: {failure}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    for task, entry in meta["tasks"].items():
        sizes = entry["sizes"]
        note = f"  [{entry['approximation'].split(':')[0]}]" if "approximation" in entry else ""
        print(f"{task:<22} {entry['classes']:>4} classes  tr {sizes['tr']:>6}  va {sizes['va']:>5}  "
              f"te {sizes['te']:>5}{note}")
    for task, reason in meta["skipped"].items():
        print(f"{task:<22} skipped: {reason}")
    print(f"{settings.out}: {len(meta['tasks'])} tasks in {meta['seconds']} s (meta.json beside them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
