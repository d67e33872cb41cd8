"""Parts of a run beyond the provenance chain, each with its own tables (declared in
`database/tables.py`, or created on first use): one module per part holds its writes,
its reads (the dataclasses `RunView` answers with) and its piece of the dump.

Map
- `asm_builds`  — below the kernel: each Triton kernel compiled for the run's GPU (PTX,
  SASS, line maps, facts), added to a stored run when first asked for (`AsmStore`).
- `distributed` — distributed jobs: a run's rank and job, which ranks compiled identical
  code (`code_digest`), each graph's collectives and compute/communication order.
- `decisions`   — the run's timing decisions (kernelscope.decisions' data, stored):
  written with the run, read back as `RunDecisions`, and the dump's `run.decisions`.
- `subgraphs`   — higher-order ops' subgraphs: which graph is a cond branch or a nested
  region of which parent, its call sites and label (`subgraphs_of_run`, `dump_subgraph`).
- `user_kernels` — a program's own Triton kernels: each line of a generated copy linked to
  the user's kernel line (both ways), the configs and the one launched (`dump_user_kernel`).
- `kernel_parts` — a foreach kernel's sub-kernels with the optimizer parameters each updates,
  by kernel line or by the source line (`opt.step()`) they came from (`dump_parts`).
- `numerics`    — `kernelscope numerics`: every kernel output compared with eager, the first
  divergence, the fixes tried; per model line (`line_numerics`), the dump's `run.numerics`.
- `profiles`    — device time attached to a run (`kernelscope profile`), per kernel and
  source line; its tables are created on first attach.
- `why`         — guards (at the user line that caused each), recompiles' failed guards (the
  values, the lines, advice) and the fusions Inductor refused: per line (`line_why`), per
  file (`file_why`), whole, and the dump's `run.guards`, `recompiles[].failures`,
  `graphs[].not_fused` (docs/why.md).
- `recompute`   — backward nodes that recompute a forward op (activation checkpointing, the
  partitioner's choice), their forward twin and kernels (`recomputes_of`, `dump_recomputes`).
- `memory`      — each graph's allocation timeline, peak and saved-for-backward tensors, per
  model line (`RunMemory`, `file_memory`), eager's saved bytes beside them, and its dump.
- `memory_step` — the whole step's peak from the graphs' timelines (pure: `step_peak`).
- `memory_measured` — where each wrapper ran from, and `--memory`'s measured step joined to
  wrapper lines beside the predicted bytes (`MeasuredSummary`).

A new part: a module here with its dataclasses, `write_*` (called from
`writing/writer.py` in the run's transaction, or on its own like `profiles`), its reads
(each reached through one `RunView` method) and its `dump_*` piece (called from
`export/dump.py`); its tables in `database/tables.py` with the schema version that adds them.
"""
