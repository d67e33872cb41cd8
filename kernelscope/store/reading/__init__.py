"""Answering from stored runs: every read behind `StoreBackend` and `RunView`.

Each function takes the connection (and a run id, a located file): reads go through the
store's indexes, never a whole-table scan; what covers a whole run is cached
(`answer_cache`: a run never changes once written).

Map
- `runs`               — the store's runs: the list, the latest (per target), a run id
  resolved, one run's summary and details (`show`), each run's recorded workspace.
- `locate`             — which run has a file and what the file is there (source, graph,
  wrapper, kernel, PTX/SASS stage file); a located file's lines.
- `query`              — the whole provenance chain through one line (`StoreBackend.query`).
- `chain_reader`       — the index lookups a chain is assembled from.
- `source_index`       — every line of one model source file answered in one pass
  (LineAnswer, SourceLineSummary), and the per-line counts the overviews keep.
- `line_overviews`     — the `line_overviews` table: each source line's answer counted per
  graph and module instance, written with the run (`kernelscope query`'s default answer).
- `graphs_and_kernels` — a run's graphs and kernels as small records (GraphInfo,
  KernelInfo), kernel facts, kernels' model lines, fallbacks, a frame's model lines.
- `recorded_code`      — the code a run recorded at a source file's lines.
- `recomputes`         — what a line's backward recomputes (activation checkpointing).
- `rollup`             — module summaries of an answer (what each instance contributes).
- `folding`            — module instances of the same shape folded into one group, labels.
- `module_tree`        — a run's module instances as a folded tree (module lists).
- `answer_cache`       — the process-wide cache of answers read from runs.

A new read: a function here (in the module whose job it is, or a new module named for
what it reads), and one `RunView` method that calls it; a read of a part's own tables goes
in that part's `parts/` module instead.
"""
