"""The store's schema is its own: outside kernelscope/store/ no module touches the
SQLite connection, imports sqlite3 or the store's SQL helpers, or writes SQL. Front
ends (the CLI, the language server, the TUI, diff, profile, the engine's prune)
read through the read model, `StoreBackend.run(run_id)` -> RunView, never through the
store's internal modules (its `database/` package, the answer cache, the writer)."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "kernelscope"
STORE = PACKAGE / "store"
SQL = re.compile(r"\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|VIEW)|DROP\s+"
                 r"(TABLE|INDEX)|PRAGMA|VACUUM|BEGIN\s+(IMMEDIATE|TRANSACTION)|ROLLBACK)\b")
# The store's internals: the database package (connection, tables, SQL helpers, value
# checks), the answer cache, the writer.
INTERNAL = re.compile(r"kernelscope\.store\.(database|reading\.answer_cache|writing\.writer)\b"
                      r"|from kernelscope\.store import .*\bdatabase\b"
                      r"|from kernelscope\.store\.reading import .*\banswer_cache\b"
                      r"|from kernelscope\.store\.writing import .*\bwriter\b")
CODE = [
    (re.compile(r"\.conn\b"), "the store's connection (`.conn`)"),
    (re.compile(r"\bsqlite3\b"), "sqlite3"),
    (re.compile(r"\bexecute(many|script)?\("), "execute()"),
    (INTERNAL, "a store-internal module"),
]


def problems_in(path: Path) -> list[str]:
    """`file:line: what` for every use of the database found in one Python file."""
    text = path.read_text(encoding="utf-8")
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and SQL.search(token.string):
            found.append(f"{path}:{token.start[0]}: SQL in a string: {SQL.search(token.string).group(0)}")
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for pattern, what in CODE:
            if pattern.search(code):
                found.append(f"{path}:{number}: {what}: {line.strip()}")
    return found


def package_files() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if STORE not in path.parents)


def test_no_module_outside_the_store_uses_the_database():
    files = package_files()
    assert len(files) > 50 and any("lsp" in path.parts for path in files)
    problems = [problem for path in files for problem in problems_in(path)]
    assert not problems, "\n".join(problems)


def test_the_check_finds_what_it_looks_for(tmp_path):
    """The scan sees each kind of database use (a scan that finds nothing proves nothing)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import sqlite3\n"
        "from kernelscope.store.database.sql import select_in\n"
        "from kernelscope.store.reading import answer_cache\n"
        "rows = store.conn.execute('SELECT MAX(id), COUNT(*) FROM runs').fetchone()\n"
        "query = '''\n    DELETE FROM runs WHERE id = ?'''\n"
        "note = 'select a run from the list'  # English, not SQL\n"
    )
    found = problems_in(sample)
    assert any("sqlite3" in problem for problem in found)
    assert sum("store-internal module" in problem for problem in found) == 2
    assert any("`.conn`" in problem for problem in found) and any("execute()" in problem for problem in found)
    assert sum("SQL in a string" in problem for problem in found) == 2
    assert not any(":7:" in problem for problem in found)
