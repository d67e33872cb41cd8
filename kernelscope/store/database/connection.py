"""Opening a store's database: one file, `<root>/kernelscope.sqlite`, in WAL mode so that
readers (the LSP server, the TUI) never block on a compile that is writing a run; the
store's write lock, what a write's failure means to a user, and a damaged database's
errors. The tables themselves are in `tables.py`.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from pathlib import Path

from kernelscope.errors import StoreError
from kernelscope.store.database import tables

DB_FILE_NAME = "kernelscope.sqlite"
BUSY_TIMEOUT_SECONDS = 10.0  # what one statement waits for another connection's lock
WRITE_WAIT_SECONDS = 600.0  # what a writer waits for the store's write lock before giving up

def connect(root: Path, create: bool) -> sqlite3.Connection:
    """Open `<root>/kernelscope.sqlite`, creating the store when `create` is true.

    The connection is in autocommit mode (`isolation_level=None`): writers open
    their transactions explicitly with BEGIN (see `begin_write`), so it is plain
    where one starts. A store in a folder this process cannot write (a read-only
    mount, a CI artifact) is opened read-only: every read works, a write says why
    it cannot. Every failure is a StoreError naming the file and what to do.
    """
    db_path = root / DB_FILE_NAME
    if not db_path.exists():
        if not create:
            raise StoreError(
                f"no kernelscope store at {root} — run `kernelscope compile FILE.py:FACTORY` "
                "first, or pass --store DIR"
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the store folder {root}: {error.strerror or error} — "
                             "pass --store DIR to record somewhere writable") from error
    elif db_path.is_dir() or not os.access(db_path, os.R_OK):
        raise StoreError(f"{db_path} cannot be read (a folder, or no read permission): "
                         "fix its permissions or pass --store DIR")
    writable = writable_store(root)
    if not writable and not db_path.exists():
        raise StoreError(f"the store folder {root} is read-only: pass --store DIR to record somewhere writable")
    try:
        conn = _open(db_path, writable)
    except sqlite3.DatabaseError as error:
        raise unreadable(db_path, error) from error
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        _create_or_check_schema(conn, db_path, writable)  # before WAL: a foreign file stays as it is
        if writable:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as error:
        conn.close()
        raise unreadable(db_path, error) from error
    except BaseException:
        conn.close()
        raise
    return conn


def writable_store(root: Path) -> bool:
    """Can this process write the store (its folder and, if present, its database)?"""
    db_path = root / DB_FILE_NAME
    return os.access(root, os.W_OK | os.X_OK) and (not db_path.exists() or os.access(db_path, os.W_OK))


def _open(db_path: Path, writable: bool) -> sqlite3.Connection:
    if writable:
        conn = sqlite3.connect(db_path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
    else:
        # Read-only: SQLite cannot make the WAL's shared-memory file in a read-only folder, so
        # the file is opened as immutable (no locks; nothing can write a read-only folder).
        uri = f"{db_path.absolute().as_uri()}?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
    conn.row_factory = sqlite3.Row
    return conn


# What a reader raises when a row holds a value kernelscope never writes (values.py).
_VALUE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError, UnicodeError)


def reads_damage_as_store_errors(cls):
    """Class decorator: a public method of `cls` (StoreBackend, RunView) that meets a database
    damaged past what opening it checked raises the StoreError `unreadable` gives (one line,
    exit 5, how to repair) instead of an sqlite3 error, so no reader outside the store needs
    to know the database exists. `cls` finds its database file at `self.db_path` and its
    connection at `self.conn` (StoreBackend) or `self._conn` (RunView). A reader that fails
    on a value kernelscope never writes (a crafted or damaged store: values.value_problems
    finds the row) raises a StoreError naming that row; a failure with no such row is a bug
    and goes on as it is."""
    import functools

    def wrap(method):
        @functools.wraps(method)
        def translated(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except sqlite3.DatabaseError as error:
                raise unreadable(self.db_path, error) from error
            except _VALUE_ERRORS as error:
                damage = crafted_values_error(getattr(self, "conn", None) or self._conn, self.db_path)
                if damage is None:
                    raise
                raise damage from error

        return translated

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_") and not isinstance(value, (staticmethod, classmethod, type)):
            setattr(cls, name, wrap(value))
    return cls


def crafted_values_error(conn: sqlite3.Connection, db_path: Path) -> StoreError | None:
    """The StoreError for a store whose rows hold values kernelscope never writes (a
    crafted or damaged store: values.value_problems), or None for a store without any."""
    from kernelscope.store.database import values

    try:
        problems = values.value_problems(conn)
    except sqlite3.DatabaseError:
        return None
    if not problems:
        return None
    shown = "; ".join(str(problem) for problem in problems[:3])
    return StoreError(f"{db_path} holds values kernelscope never writes ({shown}): a crafted or "
                      f"damaged store; `kernelscope doctor --store {db_path.parent}` lists them; record the run "
                      "again or delete it")


def unreadable(db_path: Path, error: sqlite3.DatabaseError) -> StoreError:
    """The StoreError for an SQLite failure while opening or reading a store."""
    text = str(error)
    if "locked" in text or "busy" in text:
        return StoreError(f"{db_path} stayed locked by another process for {BUSY_TIMEOUT_SECONDS:.0f}s: try again")
    if "disk is full" in text or "no space" in text.lower():
        return StoreError(f"no space left on the device of {db_path}: free some space, or pass --store DIR")
    return StoreError(
        f"{db_path} is damaged or not a readable SQLite database ({text}): `kernelscope doctor --store "
        f"{db_path.parent} --repair` sets it aside (nothing is deleted) so the next compile starts a new store; "
        "or pass --store DIR"
    )


def begin_write(conn: sqlite3.Connection, wait_seconds: float = WRITE_WAIT_SECONDS) -> None:
    """BEGIN IMMEDIATE (the store's write lock), waiting for other writers: a compile,
    a watch and the CLI may all be writing runs into one store; none of them fails
    while another holds the lock, for up to `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            text = str(error)
            if "readonly" in text or "read-only" in text:
                raise StoreError("the store is read-only here (a read-only folder or mount): pass --store DIR "
                                 "to record somewhere writable") from error
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                if "locked" in text or "busy" in text:
                    raise StoreError(f"another process has held the store's write lock for {wait_seconds:.0f}s: "
                                     "try again when it is done") from error
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def write_errors(root: Path):
    """Turn a failed write into a StoreError that says what to do (the write itself
    rolled back: nothing of it is visible, and the earlier runs are intact)."""
    try:
        yield
    except StoreError:
        raise
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StoreError(f"no space left on the device of {root} while writing a run: free some space or "
                             "pass --store DIR; nothing was written, the earlier runs are intact") from error
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise StoreError(f"cannot write into the store {root}: it is read-only here ({error.strerror}); pass "
                             "--store DIR to record somewhere writable; nothing was written") from error
        raise
    except sqlite3.OperationalError as error:
        text = str(error)
        if "full" in text:
            raise StoreError(f"no space left on the device of {root} while writing a run ({text}): free some "
                             "space or pass --store DIR; nothing was written, the earlier runs are intact") from error
        if "readonly" in text or "read-only" in text:
            raise StoreError(f"the store {root} is read-only here: pass --store DIR to record somewhere "
                             "writable; nothing was written") from error
        raise


def _create_or_check_schema(conn: sqlite3.Connection, db_path: Path, writable: bool) -> None:
    """Check the schema without taking the write lock (a reader must not wait for a
    writer); only creating a new store or adding a column takes it."""
    existing = _tables(conn)
    if existing:
        _check_version(conn, db_path, existing, writable)
        if not writable or not _missing_columns(conn):
            return
    elif not writable:
        raise StoreError(f"{db_path} is empty and its folder is read-only: pass --store DIR")
    begin_write(conn)
    try:
        existing = _tables(conn)  # another process may have created it meanwhile
        if not existing:
            # executescript() would COMMIT first, so statements run one by one here.
            for statement in _statements(tables.ALL):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('store_schema_version', ?)",
                (str(tables.STORE_SCHEMA_VERSION),),
            )
        else:
            _check_version(conn, db_path, existing, writable)
            for table, column, kind in _missing_columns(conn):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            for statement in tables.ADDED_COLUMN_INDEXES:
                conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _missing_columns(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    missing = []
    for table, columns in tables.ADDED_COLUMNS.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing += [(table, column, kind) for column, kind in columns if column not in present]
    return missing


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def has_table(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the store has `table` (a read-only store of an older version may lack the
    tables added since: their readers answer as for a run that recorded none)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return found is not None


def _check_version(conn: sqlite3.Connection, db_path: Path, existing: set[str], writable: bool = True) -> None:
    row = None
    if "meta" in existing:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_schema_version'").fetchone()
    if row is None:
        raise StoreError(
            f"{db_path} is an SQLite database but not a kernelscope store: "
            "move it away or pass --store DIR"
        )
    version = row[0]
    if version in tables.ADDED_SINCE_VERSION and not writable and version != "2":
        return  # read as it is: the tables added since are read as empty (has_table)
    if version in tables.ADDED_SINCE_VERSION:
        # Versions 3 and 4 only add tables (below the kernel: filled on first ask; distributed
        # jobs: none for a run recorded without a process group; decisions: none for a run
        # recorded before them): the runs stay as they are.
        for statement in _statements(tables.ADDED_SINCE_VERSION[version]):
            conn.execute(statement)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'store_schema_version'",
                     (str(tables.STORE_SCHEMA_VERSION),))
        return
    if version.isdigit() and int(version) < tables.STORE_SCHEMA_VERSION:
        raise StoreError(
            f"{db_path} was written by an older kernelscope (store schema version {version}; "
            f"this one reads version {tables.STORE_SCHEMA_VERSION}, which records every node's whole "
            "call stack, module instance and pass lineage — an old run cannot be upgraded "
            f"because it never recorded them). Re-record: move {db_path.parent} away (or "
            "delete it) and run `kernelscope compile FILE.py:FACTORY` (or `kernelscope run` / "
            "`kernelscope import`) again; or pass --store DIR to use a new store"
        )
    if version != str(tables.STORE_SCHEMA_VERSION):
        raise StoreError(
            f"{db_path} has store schema version {version!r}, but this kernelscope reads version "
            f"{tables.STORE_SCHEMA_VERSION}: upgrade kernelscope to read it "
            "(a newer one wrote it; nothing was changed), "
            "or pass --store DIR to use a new store"
        )


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (it holds no ';' inside strings)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [statement.strip() for statement in "\n".join(lines).split(";") if statement.strip()]
