"""A run exported: `kernelscope dump`'s stable JSON and its JSON Schema.

Map
- `dump`     — a run as deterministic JSON (`dump_run`, `DumpOptions`), the portable
  forms of paths and generated text, and the schema (`kernelscope/schema/dump-v*.json`:
  `load_schema`, `validate_dump`, `DUMP_FIELD_CHANGES`).
- `asm_dump` — below the kernel in a dump: each kernel's `launch` and `asm`.

A new field of the dump: in `dump` (`_DumpContext`), the schema's next version in
`kernelscope/schema/`, and `DUMP_FIELD_CHANGES` when it differs from the RunRecord
dataclasses; a part's own piece (`parts/decisions.dump_decisions`,
`parts/profiles.dump_profile`) stays in its part.
"""
