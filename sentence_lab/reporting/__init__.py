"""Runs made readable: the report over a directory of runs (``report``: its runs, tables, figures and nearest
neighbours, one module each) and runs or results files side by side (``compare``)."""
