"""A store's health: `kernelscope doctor`.

Map
- `integrity` — checking a store (SQLite's integrity and foreign keys, every run whole,
  every generated file as written, leftovers of interrupted writes) and repairing what
  can be repaired safely (`check`, `repair`, `file_problem`).

A new check goes in `integrity` (`_check_database`, `_check_run`), with its repair in
`repair` when one is safe.
"""
