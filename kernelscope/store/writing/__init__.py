"""Putting runs into the store and taking them out, each change all or nothing.

Map
- `writer`   — one RunRecord written: files staged, every row inserted, every source
  line's answer counted (reading/line_overviews), then the staging folder renamed and the
  transaction committed (`write_run`; `write_staged` is that protocol for any run).
- `coverage` — how much of a run carries provenance, computed once as it is written.
- `merge`    — another store's runs copied into this one (`kernelscope merge`: the ranks
  of a distributed job), rows renumbered and files copied.
- `deletion` — a run deleted (rows, then files), and retention: the newest `keep` runs of
  a target kept (`prune_runs`, watch mode).

What a new table holds is written in `writer` (`_RunWriter`), or in the `parts/` module
that owns the table (as `parts/decisions.write_run_decisions`), called from the writer in
the run's own transaction.
"""
