"""The SQLite schema of a store and opening a connection to it.

One database file, `<root>/kernelscope.sqlite`, in WAL mode so that readers
(the LSP server, the TUI) never block on a compile that is writing a run.
Every table carries the ids it is looked up by; every lookup the query layer
makes has an index (see INDEXES), so answers never scan a whole table.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from pathlib import Path

from kernelscope.errors import StoreError

DB_FILE_NAME = "kernelscope.sqlite"
STORE_SCHEMA_VERSION = 4  # 3: below the kernel (ASM_TABLES), distributed jobs (DISTRIBUTED_TABLES); 4: DECISIONS_TABLES

TABLES = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    target            TEXT NOT NULL,
    device            TEXT NOT NULL,
    mode              TEXT NOT NULL,
    dynamic           INTEGER NOT NULL,
    torch_version     TEXT NOT NULL,
    triton_version    TEXT NOT NULL,
    provenance        TEXT NOT NULL,
    created           REAL NOT NULL,
    workspace         TEXT NOT NULL,  -- absolute, as recorded
    workspace_from_store TEXT,        -- the same, relative to the store root when written (moved stores)
    peak_memory_mb    REAL NOT NULL,
    execute_max_error REAL,
    timings_json      TEXT NOT NULL,
    config_json       TEXT NOT NULL,
    warnings_json     TEXT NOT NULL,
    coverage_json     TEXT NOT NULL,
    graph_count       INTEGER NOT NULL,
    kernel_count      INTEGER NOT NULL
);

CREATE TABLE graphs (
    id                    INTEGER PRIMARY KEY,
    run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key                   TEXT NOT NULL,
    compile_id            TEXT NOT NULL,
    frame_id              INTEGER NOT NULL,
    frame_compile_id      INTEGER NOT NULL,
    attempt               INTEGER NOT NULL,
    kind                  TEXT NOT NULL,
    wrapper_attributable  INTEGER NOT NULL,
    inductor_mapping_json TEXT,
    UNIQUE (run_id, key)
);

-- Every file a run knows: user source files it recorded nodes for, and the
-- generated files it wrote (paths relative to the store root).
CREATE TABLE files (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('source', 'pre_grad', 'post_grad', 'wrapper', 'kernel')),
    graph_id   INTEGER REFERENCES graphs(id) ON DELETE CASCADE,
    kernel_id  INTEGER REFERENCES kernels(id) ON DELETE CASCADE,
    sha256     TEXT,
    line_count INTEGER,
    UNIQUE (run_id, path)
);

CREATE TABLE nodes (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id        INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    stage           TEXT NOT NULL CHECK (stage IN ('pre', 'post')),
    position        INTEGER NOT NULL,
    name            TEXT NOT NULL,
    op              TEXT NOT NULL,
    target          TEXT NOT NULL,
    source_file     TEXT,
    source_line     INTEGER,
    source_function TEXT NOT NULL,
    source_code     TEXT NOT NULL,
    source_via      TEXT NOT NULL,
    graph_line      INTEGER NOT NULL,
    stack_id        INTEGER REFERENCES stacks(id) ON DELETE CASCADE,  -- the whole user call stack
    module_path     TEXT NOT NULL,  -- module instance, e.g. blocks.0.attn.qkv ('' outside submodules)
    module_class    TEXT NOT NULL,
    lineage_json    TEXT            -- post-grad only: the passes that made the node (PassStep list)
);

-- A user call stack, shared by every node of a run that has it (a loop over
-- layers gives many nodes the same few stacks). depth 0 is the outermost frame;
-- the innermost frame is the nodes' direct line (nodes.source_*).
CREATE TABLE stacks (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    size   INTEGER NOT NULL
);

CREATE TABLE stack_frames (
    stack_id INTEGER NOT NULL REFERENCES stacks(id) ON DELETE CASCADE,
    depth    INTEGER NOT NULL,
    run_id   INTEGER NOT NULL,
    file     TEXT NOT NULL,  -- stored like nodes.source_file (workspace-relative where possible)
    line     INTEGER NOT NULL,
    function TEXT NOT NULL,
    code     TEXT NOT NULL,
    PRIMARY KEY (stack_id, depth)
);

-- post-grad node -> the pre-grad nodes it came from (FxNode.from_pre_grad);
-- pre_node_id is NULL when the named pre-grad node is not in the run.
CREATE TABLE node_links (
    post_node_id  INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    pre_node_name TEXT NOT NULL,
    pre_node_id   INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
    PRIMARY KEY (post_node_id, position)
);

CREATE TABLE kernels (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id            INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    position            INTEGER NOT NULL,
    name                TEXT NOT NULL,
    kind                TEXT NOT NULL,
    file                TEXT,
    inductor_nodes_json TEXT
);

-- Kernel.nodes: the kernel-level set of post-grad nodes, in recorded order.
CREATE TABLE kernel_nodes (
    kernel_id INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    node_id   INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
    PRIMARY KEY (kernel_id, position)
);

-- Kernel.wrapper_lines: the wrapper lines that launch or call a kernel.
CREATE TABLE kernel_calls (
    kernel_id    INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    graph_id     INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    wrapper_line INTEGER NOT NULL,
    PRIMARY KEY (kernel_id, wrapper_line)
);

-- One row per (generated line, post-grad node); a line recorded without nodes
-- has one row with node_name NULL. origin_index is the LineOrigin's position in
-- its list, so the rows of one LineOrigin can be put back together.
CREATE TABLE generated_lines (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id     INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    kernel_id    INTEGER REFERENCES kernels(id) ON DELETE CASCADE,
    file         TEXT NOT NULL,
    line         INTEGER NOT NULL,
    text         TEXT NOT NULL,
    reason       TEXT NOT NULL,
    origin_index INTEGER NOT NULL,
    node_name    TEXT,
    node_id      INTEGER REFERENCES nodes(id) ON DELETE CASCADE
);

CREATE TABLE graph_breaks (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    reason          TEXT NOT NULL,
    compile_id      TEXT NOT NULL,
    source_file     TEXT,
    source_line     INTEGER,
    source_function TEXT NOT NULL,
    source_code     TEXT NOT NULL,
    explanation     TEXT NOT NULL,
    hints_json      TEXT NOT NULL,
    url             TEXT NOT NULL,
    stack_json      TEXT NOT NULL  -- the user code traceback, outermost first
);

CREATE TABLE recompiles (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    compile_id TEXT NOT NULL,
    reason     TEXT NOT NULL
);
"""

# ---- below the kernel (kernelscope/asm, store/asm_store.py) --------------------------
# A Triton kernel compiled for the run's GPU, added to a stored run on first ask (or
# up front with --asm): its TTIR/TTGIR/PTX/SASS files under runs/<id>/asm/, each
# stage's lines mapped to the kernel's lines, and its resource facts.
ASM_TABLES = """
-- One row per kernel built (or that failed to build: `error`, and no facts).
CREATE TABLE kernel_asm (
    kernel_id       INTEGER PRIMARY KEY REFERENCES kernels(id) ON DELETE CASCADE,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    error           TEXT,
    arch            TEXT,     -- sm_90
    config_json     TEXT,     -- the config built: {kwargs, num_warps, num_stages}
    candidates_json TEXT,     -- every config the kernel's autotuner holds
    chosen_by       TEXT,     -- why this config is the one shown
    registers       INTEGER,  -- per thread
    spill_bytes     INTEGER,  -- registers spilled: spill stores per thread, bytes (ptxas)
    spill_load_bytes INTEGER, -- spill loads per thread, bytes (ptxas)
    local_bytes     INTEGER,  -- local memory per thread (stack frame + local)
    local_stores    INTEGER,  -- STL instructions
    local_loads     INTEGER,  -- LDL instructions
    shared_bytes    INTEGER,  -- per block
    num_warps       INTEGER,
    num_stages      INTEGER,
    occupancy_json  TEXT,     -- {blocks_per_sm, active_warps, max_warps, limited_by}
    instructions    INTEGER,  -- SASS instructions
    mix_json        TEXT,     -- instruction class -> count
    gpu_json        TEXT,     -- --target cuda: what the GPU's launcher reported
    build_seconds   REAL NOT NULL,
    tools_json      TEXT
);

CREATE TABLE asm_files (
    kernel_id  INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    stage      TEXT NOT NULL CHECK (stage IN ('ttir', 'ttgir', 'ptx', 'sass')),
    path       TEXT NOT NULL,  -- runs/<id>/asm/<graph key>/<kernel>/<kernel>.<stage>
    line_count INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    PRIMARY KEY (kernel_id, stage)
);

-- A stage line -> the kernel line it came from (a SASS line of a helper inlined at
-- several kernel lines has one row per kernel line).
CREATE TABLE asm_lines (
    kernel_id   INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    stage       TEXT NOT NULL,
    line        INTEGER NOT NULL,
    kernel_line INTEGER NOT NULL,
    text        TEXT NOT NULL,
    opcode      TEXT NOT NULL,
    via         TEXT NOT NULL
);

-- --target cuda: the config each kernel's autotuner launched and what the GPU reported.
CREATE TABLE kernel_launches (
    kernel_id       INTEGER PRIMARY KEY REFERENCES kernels(id) ON DELETE CASCADE,
    config_json     TEXT NOT NULL,
    candidates_json TEXT NOT NULL,
    registers       INTEGER,
    spills          INTEGER,
    shared_bytes    INTEGER
);
"""

ASM_INDEXES = """
CREATE INDEX kernel_asm_by_run        ON kernel_asm (run_id);
CREATE INDEX asm_files_by_path        ON asm_files (path);
CREATE INDEX asm_files_by_run         ON asm_files (run_id);
CREATE INDEX asm_lines_by_kernel_line ON asm_lines (kernel_id, kernel_line);
CREATE INDEX asm_lines_by_stage_line  ON asm_lines (kernel_id, stage, line);
"""
# ---- end of below the kernel ---------------------------------------------------------

# -- distributed jobs (docs/distributed.md) ------------------------------------------
# A run's place in a torch.distributed job, the collectives of its graphs, and the
# graphs DDP's optimizer split. Kept in tables of their own; readers join them.
DISTRIBUTED_TABLES = """
CREATE TABLE run_ranks (
    run_id     INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    rank       INTEGER NOT NULL,
    world_size INTEGER NOT NULL,
    job        TEXT NOT NULL,  -- the runs of one job's ranks share it (engine/rank_info.py)
    backend    TEXT NOT NULL,  -- gloo, nccl, fake, ...
    local_rank INTEGER
);

CREATE TABLE graph_splits (
    graph_id     INTEGER PRIMARY KEY REFERENCES graphs(id) ON DELETE CASCADE,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    splitter     TEXT NOT NULL,  -- DDPOptimizer ('' when no probe named it)
    part         INTEGER NOT NULL,
    parts        INTEGER NOT NULL,
    params_json  TEXT NOT NULL,
    bucket_bytes INTEGER NOT NULL,
    cap_bytes    INTEGER NOT NULL
);

-- Each graph's generated code (its wrapper, which embeds the kernels) as a digest that
-- leaves out what differs between machines, runs and ranks (Inductor's cache paths, the
-- workspace, the rank's GPU index), so ranks that compiled identical code compare equal.
CREATE TABLE graph_code (
    graph_id INTEGER PRIMARY KEY REFERENCES graphs(id) ON DELETE CASCADE,
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    digest   TEXT NOT NULL
);

-- record.Collective: one row per communicating post-grad node.
CREATE TABLE collectives (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id       INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    node_id        INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
    node_name      TEXT NOT NULL,
    op             TEXT NOT NULL,
    role           TEXT NOT NULL CHECK (role IN ('issue', 'wait', 'fused')),
    peers_json     TEXT NOT NULL,  -- node names: an issue's waits, a wait's collectives
    group_name     TEXT NOT NULL,
    group_size     INTEGER,
    reduce_op      TEXT NOT NULL,
    bytes          INTEGER,
    issued_by      TEXT NOT NULL,
    style          TEXT NOT NULL,
    frame_file     TEXT,
    frame_line     INTEGER,
    frame_function TEXT NOT NULL,
    frame_code     TEXT NOT NULL,
    redistribute   TEXT NOT NULL,
    model_file     TEXT,  -- the model line whose op needed it (stored like nodes.source_file)
    model_line     INTEGER,
    model_function TEXT NOT NULL,
    model_code     TEXT NOT NULL
);
"""

DISTRIBUTED_INDEXES = """
CREATE INDEX run_ranks_by_job      ON run_ranks (job, rank);
CREATE INDEX splits_by_run         ON graph_splits (run_id);
CREATE INDEX graph_code_by_run     ON graph_code (run_id);
CREATE INDEX collectives_by_graph  ON collectives (graph_id);
CREATE INDEX collectives_by_node   ON collectives (node_id);
CREATE INDEX collectives_by_run    ON collectives (run_id);
"""

# -- end of distributed jobs ----------------------------------------------------------

# -- timing decisions (docs/decisions.md) -------------------------------------------
# The choices Inductor made by timing on the GPU (pad_mm, max-autotune, fusion benchmarks,
# launch configs), as a `--target cuda` run made them or virtual-cuda replayed or guessed them.
DECISIONS_TABLES = """
-- The GPU a run's code was generated for, and where a virtual-cuda run's replayed decisions came from.
CREATE TABLE run_decision_info (
    run_id        INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    gpu_json      TEXT,           -- {name, capability, sm_count} (virtual-cuda: the emulated GPU)
    source        TEXT,           -- the --decisions it replayed (NULL: none)
    recorded_json TEXT,           -- their GPU, torch and triton versions, target and device
    unused_json   TEXT NOT NULL   -- recorded decisions no compile of this run asked for
);

-- record.Decision: one row per decision, in the order they were made.
CREATE TABLE decisions (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    kind         TEXT NOT NULL,   -- pad_mm, mm_compute_bound, autotune, fusion_benchmark, triton_config
    key          TEXT NOT NULL,   -- Inductor's own key for it
    choice       TEXT NOT NULL,
    origin       TEXT NOT NULL CHECK (origin IN ('timed', 'heuristic', 'replayed', 'guessed')),
    rule         TEXT NOT NULL,
    summary      TEXT NOT NULL,
    location     TEXT NOT NULL,   -- record.Decision.where
    kernel_name  TEXT NOT NULL,
    kernel_id    INTEGER REFERENCES kernels(id) ON DELETE CASCADE,  -- triton_config: its kernel
    timings_json TEXT NOT NULL,
    detail_json  TEXT NOT NULL
);
"""

DECISIONS_INDEXES = """
CREATE INDEX decisions_by_run    ON decisions (run_id, position);
CREATE INDEX decisions_by_kernel ON decisions (kernel_id);
"""

# A store of an older version gains the tables added since, when opened: version 2 the
# below-the-kernel, distributed and decisions tables, version 3 the decisions tables.
ADDED_SINCE_VERSION = {
    "2": ASM_TABLES + ASM_INDEXES + DISTRIBUTED_TABLES + DISTRIBUTED_INDEXES + DECISIONS_TABLES + DECISIONS_INDEXES,
    "3": DECISIONS_TABLES + DECISIONS_INDEXES,
}

# -- end of timing decisions ----------------------------------------------------------

# Lookups both ways by (file, line), plus one index per foreign key so that
# deleting a run (ON DELETE CASCADE) does not scan the child tables. The
# `*_by_run` indexes serve those deletes and whole-run listings only; a query
# about one line or file must never be answered through them.
INDEXES = """
CREATE INDEX nodes_by_source       ON nodes (source_file, source_line);
CREATE INDEX nodes_by_run_source   ON nodes (run_id, source_file, source_line);
CREATE INDEX nodes_by_graph_name   ON nodes (graph_id, stage, name);
CREATE INDEX nodes_by_graph_line   ON nodes (graph_id, stage, graph_line);
CREATE INDEX nodes_by_stack        ON nodes (stack_id);
CREATE INDEX frames_by_line        ON stack_frames (run_id, file, line);
CREATE INDEX stacks_by_run         ON stacks (run_id);
CREATE INDEX lines_by_file_line    ON generated_lines (file, line);
CREATE INDEX lines_by_node         ON generated_lines (node_id, file, line);  -- covers line counts
CREATE INDEX lines_by_graph        ON generated_lines (graph_id);
CREATE INDEX lines_by_kernel       ON generated_lines (kernel_id);
CREATE INDEX lines_by_run          ON generated_lines (run_id);
CREATE INDEX files_by_path         ON files (path, run_id);
CREATE INDEX files_by_graph        ON files (graph_id);
CREATE INDEX files_by_kernel       ON files (kernel_id);
CREATE INDEX graphs_by_run         ON graphs (run_id);
CREATE INDEX kernels_by_graph      ON kernels (graph_id, name);
CREATE INDEX kernels_by_run        ON kernels (run_id);
CREATE INDEX kernel_nodes_by_node  ON kernel_nodes (node_id);
CREATE INDEX kernel_calls_by_line  ON kernel_calls (graph_id, wrapper_line);
CREATE INDEX node_links_by_pre     ON node_links (pre_node_id);
CREATE INDEX breaks_by_run         ON graph_breaks (run_id);
CREATE INDEX breaks_by_source      ON graph_breaks (source_file, source_line);
CREATE INDEX recompiles_by_run     ON recompiles (run_id);
"""


BUSY_TIMEOUT_SECONDS = 10.0  # what one statement waits for another connection's lock
WRITE_WAIT_SECONDS = 600.0  # what a writer waits for the store's write lock before giving up

# Columns added to an existing store of this schema version when it is opened for
# writing (old rows get NULL; readers accept both).
ADDED_COLUMNS = {
    "runs": [("workspace_from_store", "TEXT")],
}


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
    """Class decorator: a public method of `cls` (Store, RunView) that meets a database
    damaged past what opening it checked raises the StoreError `unreadable` gives (one line,
    exit 5, how to repair) instead of an sqlite3 error, so no reader outside the store needs
    to know the database exists. `cls` finds its database file at `self.db_path` and its
    connection at `self.conn` (Store) or `self._conn` (RunView). A reader that fails on a value kernelscope never writes (a
    crafted or damaged store: values.value_problems finds the row) raises a StoreError
    naming that row; a failure with no such row is a bug and goes on as it is."""
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
    from kernelscope.store import values

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
    tables = _tables(conn)
    if tables:
        _check_version(conn, db_path, tables, writable)
        if not writable or not _missing_columns(conn):
            return
    elif not writable:
        raise StoreError(f"{db_path} is empty and its folder is read-only: pass --store DIR")
    begin_write(conn)
    try:
        tables = _tables(conn)  # another process may have created it meanwhile
        if not tables:
            # executescript() would COMMIT first, so statements run one by one here.
            for statement in _statements(TABLES + ASM_TABLES + DISTRIBUTED_TABLES + DECISIONS_TABLES + INDEXES
                                         + ASM_INDEXES + DISTRIBUTED_INDEXES + DECISIONS_INDEXES):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('store_schema_version', ?)",
                (str(STORE_SCHEMA_VERSION),),
            )
        else:
            _check_version(conn, db_path, tables, writable)
            for table, column, kind in _missing_columns(conn):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _missing_columns(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    missing = []
    for table, columns in ADDED_COLUMNS.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing += [(table, column, kind) for column, kind in columns if column not in present]
    return missing


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def has_table(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the store has `table` (a read-only store of an older version may lack the
    tables added since: their readers answer as for a run that recorded none)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _check_version(conn: sqlite3.Connection, db_path: Path, tables: set[str], writable: bool = True) -> None:
    row = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_schema_version'").fetchone()
    if row is None:
        raise StoreError(
            f"{db_path} is an SQLite database but not a kernelscope store: "
            "move it away or pass --store DIR"
        )
    version = row[0]
    if version in ADDED_SINCE_VERSION and not writable and version != "2":
        return  # read as it is: the tables added since are read as empty (has_table)
    if version in ADDED_SINCE_VERSION:
        # Versions 3 and 4 only add tables (below the kernel: filled on first ask; distributed
        # jobs: none for a run recorded without a process group; decisions: none for a run
        # recorded before them): the runs stay as they are.
        for statement in _statements(ADDED_SINCE_VERSION[version]):
            conn.execute(statement)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'store_schema_version'", (str(STORE_SCHEMA_VERSION),))
        return
    if version.isdigit() and int(version) < STORE_SCHEMA_VERSION:
        raise StoreError(
            f"{db_path} was written by an older kernelscope (store schema version {version}; "
            f"this one reads version {STORE_SCHEMA_VERSION}, which records every node's whole "
            "call stack, module instance and pass lineage — an old run cannot be upgraded "
            f"because it never recorded them). Re-record: move {db_path.parent} away (or "
            "delete it) and run `kernelscope compile FILE.py:FACTORY` (or `kernelscope run` / "
            "`kernelscope import`) again; or pass --store DIR to use a new store"
        )
    if version != str(STORE_SCHEMA_VERSION):
        raise StoreError(
            f"{db_path} has store schema version {version!r}, but this kernelscope reads version "
            f"{STORE_SCHEMA_VERSION}: upgrade kernelscope to read it (a newer one wrote it; nothing was changed), "
            "or pass --store DIR to use a new store"
        )


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (it holds no ';' inside strings)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [statement.strip() for statement in "\n".join(lines).split(";") if statement.strip()]
