"""The store's SQLite database: one file, `<store>/kernelscope.sqlite`.

Internal to the store: only `kernelscope.store`'s own modules import it (front ends read
through `StoreBackend` and `RunView`; tests/store/test_read_model_boundary.py checks it).

Map
- `connection` — opening the database (WAL, read-only stores, creating or checking the
  schema), the write lock (`begin_write`), what a failed write means to a user
  (`write_errors`), and a damaged database's errors (`reads_damage_as_store_errors`).
- `tables`     — the SQL that creates a store of this schema version: the core tables and
  indexes, each part's own (below the kernel, distributed jobs, timing decisions), what
  each version added (`ADDED_SINCE_VERSION`, `ADDED_COLUMNS`).
- `sql`        — `select_in`: one query over many ids, in chunks.
- `values`     — values a row holds that kernelscope never writes (a crafted or damaged
  store): found on demand when a reader fails, listed by `kernelscope doctor`.

A new table or index goes in `tables` (raise `STORE_SCHEMA_VERSION` and add an
`ADDED_SINCE_VERSION` entry so an older store gains it when opened); tables created on
first use instead (profiles, line overviews) are declared in the module that uses them.
"""
