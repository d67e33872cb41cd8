"""The Python API behind `kernelscope.open`, `kernelscope.record` and
`kernelscope.recording` (see kernelscope/__init__.py and docs/python-api.md).

`store.py` opens a store and lists its runs, `run.py` is one run (show, query, dump,
the fusion picture), `answer.py` a line's answer, `recording.py` records a model or a
block of code in-process. The CLI's read commands and `compile`/`run` go through the
same functions, so the two cannot drift."""
