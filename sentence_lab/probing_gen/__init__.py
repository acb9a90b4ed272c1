"""Probing-task generator: SentEval-style probing sets from any corpus (Conneau et al. 2018, paper 003, section 2).

    python -m sentence_lab.probing_gen corpus=<dir or file> out=<dir> [tasks=[Length,BigramShift]] [train=100000]

Writes ``<out>/<file>.txt`` in SentEval's probing layout (``tr|va|te<TAB>label<TAB>sentence``) and
``<out>/meta.json`` (source corpus, settings, counts per class and split, tagger/parser and version).
Surface tasks (Length, WordContent, BigramShift) need no tagger; the rest need spaCy and an English
pipeline (``requirements-probing.txt``); see ``docs/probing.md`` ("Generating probing tasks").
"""
