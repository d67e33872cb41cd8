"""The store's tables: the SQL that creates a store of this schema version.

`connection.connect` runs it on a new store and checks an existing one against it. Every table
carries the ids it is looked up by, and every lookup the readers make has an index
(INDEXES and each part's own), so answers never scan a whole table. Parts added later
(below the kernel, distributed jobs, timing decisions) have their tables and indexes
apart, with the schema version that added them (ADDED_SINCE_VERSION).
"""
from __future__ import annotations

# 3: below the kernel (ASM_TABLES), distributed jobs (DISTRIBUTED_TABLES); 4: DECISIONS_TABLES;
# 5: SUBGRAPH_TABLES; 6: USER_KERNEL_TABLES, WHY_TABLES, RECOMPUTE_TABLES, MEMORY_TABLES, NUMERICS_TABLES;
# 7: KERNEL_PART_TABLES, CPU_ASM_TABLES, MEMORY_MEASURED_TABLES (+ asm_files remade: REMADE_IN_7)
STORE_SCHEMA_VERSION = 7

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

# ---- below the kernel (kernelscope/asm, store/parts/asm_builds.py) -------------------
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
    stage      TEXT NOT NULL CHECK (stage IN ('ttir', 'ttgir', 'ptx', 'sass', 'x86')),
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

# ---- below a C++ kernel (kernelscope/asm/x86.py, store/parts/asm_builds.py) ------------
# A C++ kernel (Inductor's cpp backend) built for the CPU is a `kernel_asm` row with arch
# 'x86-64' and no GPU facts, one `asm_files` row of stage 'x86' (its disassembly), its
# `asm_lines` (instruction -> .cpp line), and its CPU facts here.
CPU_ASM_TABLES = """
CREATE TABLE kernel_cpu_asm (
    kernel_id    INTEGER PRIMARY KEY REFERENCES kernels(id) ON DELETE CASCADE,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    isa          TEXT NOT NULL,     -- Inductor's pick: avx512, avx2, ...
    isa_bits     INTEGER NOT NULL,  -- its vector width
    vector_bits  INTEGER NOT NULL,  -- the widest vector register the instructions use
    instructions INTEGER NOT NULL,
    mix_json     TEXT NOT NULL,     -- instruction class -> count
    loops_json   TEXT NOT NULL,     -- the kernel's loops (model.CppLoop)
    remarks_json TEXT NOT NULL,     -- the compiler's vectorization remarks: [{line, text}]
    compiler     TEXT NOT NULL,
    command      TEXT NOT NULL      -- Inductor's compile command for the kernel
);

CREATE INDEX kernel_cpu_asm_by_run ON kernel_cpu_asm (run_id);
"""

# A store of version 3-6 made `asm_files` before stage 'x86' existed: the table is made again
# with the new CHECK (SQLite cannot change a CHECK in place), its rows kept.
ASM_FILES_WITH_X86 = """
CREATE TABLE asm_files_with_x86 (
    kernel_id  INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    stage      TEXT NOT NULL CHECK (stage IN ('ttir', 'ttgir', 'ptx', 'sass', 'x86')),
    path       TEXT NOT NULL,
    line_count INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    PRIMARY KEY (kernel_id, stage)
);
INSERT INTO asm_files_with_x86 (kernel_id, run_id, stage, path, line_count, sha256)
    SELECT kernel_id, run_id, stage, path, line_count, sha256 FROM asm_files;
DROP TABLE asm_files;
ALTER TABLE asm_files_with_x86 RENAME TO asm_files;
CREATE INDEX asm_files_by_path        ON asm_files (path);
CREATE INDEX asm_files_by_run         ON asm_files (run_id);
"""

# ---- end of below a C++ kernel ---------------------------------------------------------

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

# -- higher-order ops' subgraphs (docs/recording.md#subgraphs) -----------------------
# A graph that is a subgraph of a higher-order op (torch.cond's branches, while_loop's cond
# and body, a nested compile region), nested in the graph whose op calls it.
SUBGRAPH_TABLES = """
CREATE TABLE graph_subgraphs (
    graph_id        INTEGER PRIMARY KEY REFERENCES graphs(id) ON DELETE CASCADE,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    parent_graph_id INTEGER REFERENCES graphs(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,  -- Inductor's name: true_graph_0, repeated_subgraph0
    op              TEXT NOT NULL,  -- cond, while_loop, invoke_subgraph, scan, map_impl, ...
    role            TEXT NOT NULL,  -- true branch, false branch, cond, body, region, ...
    call_sites_json TEXT NOT NULL,  -- the parent's post-grad node names that call it
    label           TEXT NOT NULL
);
"""

SUBGRAPH_INDEXES = """
CREATE INDEX subgraphs_by_run    ON graph_subgraphs (run_id);
CREATE INDEX subgraphs_by_parent ON graph_subgraphs (parent_graph_id);
"""

# -- a program's own Triton kernels (docs/targets.md#your-own-triton-kernels) ---------
# A user kernel's generated copy: each line linked to the user's kernel source line, and
# the autotune configs with the one the run launched (engine/user_kernels.py).
USER_KERNEL_TABLES = """
CREATE TABLE user_kernels (
    kernel_id       INTEGER PRIMARY KEY REFERENCES kernels(id) ON DELETE CASCADE,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    function        TEXT NOT NULL,     -- the kernel's Python function
    source_file     TEXT NOT NULL,     -- its file, stored like nodes.source_file
    source_line     INTEGER NOT NULL,  -- its `def` line
    source_code     TEXT NOT NULL,     -- the `def` line's text
    configs_json    TEXT NOT NULL,     -- @triton.autotune's configs: [{kwargs..., num_warps, num_stages}]
    chosen_json     TEXT,              -- the config the run launched (NULL: no autotune)
    chosen_by       TEXT NOT NULL,     -- how, in words
    heuristics_json TEXT NOT NULL      -- names @triton.heuristics computes
);

-- A line of the generated copy -> the user's line it was copied from.
CREATE TABLE user_kernel_lines (
    kernel_id   INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    line        INTEGER NOT NULL,  -- line of the kernel file
    source_file TEXT NOT NULL,
    source_line INTEGER NOT NULL,
    source_function TEXT NOT NULL,  -- the kernel or the @triton.jit helper the line is in
    source_code TEXT NOT NULL,
    reason      TEXT NOT NULL,     -- copied from, decorator of, configs and launch metadata of
    PRIMARY KEY (kernel_id, line)
);
"""

USER_KERNEL_INDEXES = """
CREATE INDEX user_kernels_by_run          ON user_kernels (run_id);
CREATE INDEX user_kernel_lines_by_source  ON user_kernel_lines (run_id, source_file, source_line);
CREATE INDEX user_kernel_lines_by_run     ON user_kernel_lines (run_id);
"""
# -- end of a program's own Triton kernels --------------------------------------------

# ---- why: guards, recompile failures, fusion refusals (store/parts/why.py, docs/why.md) ----
WHY_TABLES = """
-- Every guard a compile installed (run_record.Guard), at the user line that caused it.
CREATE TABLE guards (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    compile_id      TEXT NOT NULL,
    kind            TEXT NOT NULL,   -- shape, specialization, or Dynamo's type (TENSOR_MATCH, ...)
    expression      TEXT NOT NULL,   -- in the user's names (x.size()[0] <= 4)
    raw             TEXT NOT NULL,   -- as torch wrote it (s77 <= 4)
    symbols_json    TEXT NOT NULL,   -- symbol -> source
    added_by        TEXT NOT NULL,
    source_file     TEXT,
    source_line     INTEGER,
    source_function TEXT NOT NULL,
    source_code     TEXT NOT NULL,
    source_via      TEXT NOT NULL,   -- guard | symbol | ''
    stack_json      TEXT NOT NULL    -- user frames, outermost first
);

-- A recompile's failed guards (run_record.GuardFailure): one row per failure.
CREATE TABLE guard_failures (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    compile_id        TEXT NOT NULL,   -- the compile the failure caused
    failed_compile_id TEXT NOT NULL,   -- the cached compile whose guard failed
    guard             TEXT NOT NULL,
    values_json       TEXT NOT NULL,
    lines_json        TEXT NOT NULL    -- [[file, line, function, code], ...]
);

-- The user lines a failure names, to find the failures of a line by index.
CREATE TABLE guard_failure_lines (
    failure_id  INTEGER NOT NULL REFERENCES guard_failures(id) ON DELETE CASCADE,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source_file TEXT NOT NULL,
    source_line INTEGER NOT NULL
);

-- A fusion Inductor's scheduler refused (run_record.NotFused), in the graph it was asked in.
CREATE TABLE fusion_refusals (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id    INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    node1       TEXT NOT NULL,   -- scheduler names
    node2       TEXT NOT NULL,
    nodes1_json TEXT NOT NULL,   -- post-grad node names each computes
    nodes2_json TEXT NOT NULL,
    reason      TEXT NOT NULL,
    -- why: scheduler | extern | template | realized buffer | graph break (NULL: scheduler)
    cause       TEXT,
    other_graph_id INTEGER REFERENCES graphs(id) ON DELETE CASCADE  -- nodes2's graph (graph break)
);
"""

WHY_INDEXES = """
CREATE INDEX guards_by_line          ON guards (run_id, source_file, source_line);
CREATE INDEX guard_failures_by_run   ON guard_failures (run_id);
CREATE INDEX failure_lines_by_line   ON guard_failure_lines (run_id, source_file, source_line);
CREATE INDEX failure_lines_by_id     ON guard_failure_lines (failure_id);
CREATE INDEX fusion_refusals_by_graph ON fusion_refusals (graph_id);
CREATE INDEX fusion_refusals_by_run  ON fusion_refusals (run_id);
CREATE INDEX fusion_refusals_by_other_graph ON fusion_refusals (other_graph_id);
"""

# -- recomputed backward nodes (docs/recording.md#activation-checkpointing) ----------------
# A backward post-grad node that computes a forward op again (activation checkpointing, or
# the partitioner's choice), and the forward node it recomputes (engine/recompute.py).
RECOMPUTE_TABLES = """
CREATE TABLE recomputed_nodes (
    node_id           INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
    run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    why               TEXT NOT NULL,  -- 'activation checkpointing' | 'partitioner'
    forward_node_id   INTEGER REFERENCES nodes(id) ON DELETE CASCADE,  -- NULL: no forward twin found
    forward_node_name TEXT NOT NULL
);
"""

RECOMPUTE_INDEXES = """
CREATE INDEX recomputed_by_run     ON recomputed_nodes (run_id);
CREATE INDEX recomputed_by_forward ON recomputed_nodes (forward_node_id);
"""

# -- memory (docs/memory.md) ------------------------------------------------------------
# Each graph's allocation timeline read from its wrapper, sized from Inductor's IR at codegen:
# its peak, every buffer and input with the post-grad node that made it, and, for a forward,
# what the partitioner saves for the backward (kernelscope.store.parts.memory).
MEMORY_TABLES = """
CREATE TABLE graph_memory (
    graph_id        INTEGER PRIMARY KEY REFERENCES graphs(id) ON DELETE CASCADE,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    peak_bytes      INTEGER NOT NULL,  -- inputs + the most the wrapper's buffers hold at once
    peak_line       INTEGER NOT NULL,  -- wrapper line of the peak (0: the inputs alone)
    inputs_bytes    INTEGER NOT NULL,
    timeline_json   TEXT NOT NULL,     -- [[wrapper line, action, buffer, bytes, live bytes], ...]
    recomputed_json TEXT NOT NULL      -- backward: post-grad node names recomputed instead of saved
);

-- One buffer the wrapper allocates, or one graph input.
CREATE TABLE memory_buffers (
    id                 INTEGER PRIMARY KEY,
    graph_id           INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id            INTEGER REFERENCES nodes(id) ON DELETE CASCADE,  -- its post-grad node (a saved
                                                                       -- backward input: the forward's)
    name               TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('buffer', 'input')),
    bytes              INTEGER NOT NULL,
    dtype              TEXT NOT NULL,
    shape              TEXT NOT NULL,
    allocated_line     INTEGER NOT NULL,
    freed_line         INTEGER NOT NULL,
    reused_by          TEXT NOT NULL,
    live_at_peak       INTEGER NOT NULL,
    is_output          INTEGER NOT NULL,
    saved_for_backward INTEGER NOT NULL,
    read_by_json       TEXT NOT NULL   -- forward, saved: the backward kernels that read it
);

-- --against-eager: the model's forward run eagerly under saved-tensor hooks (RunRecord.eager_memory).
CREATE TABLE eager_memory (
    run_id             INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    device             TEXT NOT NULL,     -- where it ran: cpu, meta
    saved_bytes        INTEGER NOT NULL,  -- activations eager saves for the backward
    saved_inputs_bytes INTEGER NOT NULL   -- parameters, buffers and inputs it saves too
);

CREATE TABLE eager_memory_lines (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source_file TEXT NOT NULL,  -- stored like nodes.source_file
    source_line INTEGER NOT NULL,
    source_function TEXT NOT NULL,
    source_code TEXT NOT NULL,
    module      TEXT NOT NULL,
    bytes       INTEGER NOT NULL,
    tensors     INTEGER NOT NULL
);
"""

MEMORY_INDEXES = """
CREATE INDEX graph_memory_by_run     ON graph_memory (run_id);
CREATE INDEX memory_buffers_by_graph ON memory_buffers (graph_id);
CREATE INDEX memory_buffers_by_node  ON memory_buffers (node_id);
CREATE INDEX memory_buffers_by_run   ON memory_buffers (run_id);
CREATE INDEX eager_lines_by_run      ON eager_memory_lines (run_id);
"""
# -- end of memory -------------------------------------------------------------------

# -- numerics (docs/numerics.md; store/parts/numerics.py) ------------------------------
# `kernelscope numerics`: every Triton kernel output of the run compared with eager.
NUMERICS_TABLES = """
CREATE TABLE numerics_runs (
    run_id       INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    target       TEXT NOT NULL,   -- cpu-triton (Triton's interpreter) | cuda
    rtol         REAL,            -- as given (NULL: per dtype)
    atol         REAL,
    first_json   TEXT,            -- record.NumericsDivergence (NULL: none)
    fixes_json   TEXT NOT NULL,   -- record.NumericsFix list
    notes_json   TEXT NOT NULL,
    seconds_json TEXT NOT NULL
);

-- record.NumericsOutput: one row per buffer a kernel launch wrote, in launch order.
CREATE TABLE numerics_outputs (
    run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    launch           INTEGER NOT NULL,
    graph_key        TEXT NOT NULL,
    kernel           TEXT NOT NULL,
    arg              TEXT NOT NULL,
    node             TEXT NOT NULL,
    dtype            TEXT NOT NULL,
    source_file      TEXT,          -- stored key of the node's model line
    source_line      INTEGER,
    source_code      TEXT NOT NULL,
    rtol             REAL NOT NULL,
    atol             REAL NOT NULL,
    max_abs          REAL,          -- NULL: not compared (note says why)
    max_rel          REAL,
    mismatched       INTEGER NOT NULL,
    elements         INTEGER NOT NULL,
    compiled_vs_fp64 REAL,
    eager_vs_fp64    REAL,
    note             TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
"""

NUMERICS_INDEXES = """
CREATE INDEX numerics_outputs_by_source ON numerics_outputs (source_file, source_line);
"""
# -- end of numerics --------------------------------------------------------------------

# -- measured memory (docs/memory.md; store/parts/memory_measured.py) -----------------
# Where each graph's wrapper runs from (Inductor's code cache), and `--memory`: the compiled
# step run again with its allocations recorded, joined to wrapper lines.
MEMORY_MEASURED_TABLES = """
CREATE TABLE graph_wrapper_files (
    graph_id INTEGER PRIMARY KEY REFERENCES graphs(id) ON DELETE CASCADE,
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    path     TEXT NOT NULL  -- <inductor cache>/<xx>/<hash of the wrapper text>.py
);

CREATE TABLE memory_measured (
    run_id       INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    device       TEXT NOT NULL,     -- cuda | cpu
    method       TEXT NOT NULL,     -- how it was measured, in words
    before_bytes INTEGER NOT NULL,  -- allocated before the step
    peak_bytes   INTEGER NOT NULL,  -- the most allocated during the step, above before_bytes
    allocations  INTEGER NOT NULL,
    joined       INTEGER NOT NULL,  -- allocations made on a wrapper line of the run's graphs
    joined_bytes INTEGER NOT NULL
);

CREATE TABLE memory_measured_lines (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    graph_id     INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    wrapper_line INTEGER NOT NULL,
    allocations  INTEGER NOT NULL,
    bytes        INTEGER NOT NULL
);
"""

MEMORY_MEASURED_INDEXES = """
CREATE INDEX wrapper_files_by_run         ON graph_wrapper_files (run_id);
CREATE INDEX memory_measured_lines_by_run ON memory_measured_lines (run_id);
CREATE INDEX memory_measured_lines_by_graph ON memory_measured_lines (graph_id);
"""
MEMORY_MEASURED = MEMORY_MEASURED_TABLES + MEMORY_MEASURED_INDEXES
# -- end of measured memory -------------------------------------------------------------

# What version 6 added: a program's own Triton kernels, why (guards, recompile failures,
# fusion refusals), recomputed backward nodes, memory and numerics. An older store's runs
# read as having recorded none of them (their memory and numerics as not recorded).
ADDED_IN_6 = (USER_KERNEL_TABLES + USER_KERNEL_INDEXES + WHY_TABLES + WHY_INDEXES + RECOMPUTE_TABLES
              + RECOMPUTE_INDEXES + MEMORY_TABLES + MEMORY_INDEXES + NUMERICS_TABLES + NUMERICS_INDEXES)

# ---- a foreach/combo kernel's sub-kernels (issue 32; store/parts/kernel_parts.py) -------
# record.KernelPart: each sub-kernel's block of lines, its nodes and the optimizer parameters
# it updates ([{group, index, name, shape}]; engine/optimizer_params.py).
KERNEL_PART_TABLES = """
CREATE TABLE kernel_parts (
    kernel_id   INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    part        INTEGER NOT NULL,  -- its `if pid < num_xblocks_<part>:` block
    first_line  INTEGER NOT NULL,  -- of the kernel file
    last_line   INTEGER NOT NULL,
    nodes_json  TEXT NOT NULL,     -- the post-grad nodes it computes
    params_json TEXT NOT NULL,     -- the optimizer parameters it updates
    PRIMARY KEY (kernel_id, part)
);
"""

KERNEL_PART_INDEXES = """
CREATE INDEX kernel_parts_by_run ON kernel_parts (run_id);
"""

# -- end of foreach sub-kernels ---------------------------------------------------------

# What version 7 added: foreach sub-kernels, C++ kernels' x86-64 facts and measured memory
# (an older store's runs read as having none of them). A version 3-6 store
# also has its `asm_files` made again with stage 'x86' allowed (REMADE_IN_7); version 2 makes
# ASM_TABLES as they are now.
ADDED_IN_7 = KERNEL_PART_TABLES + KERNEL_PART_INDEXES + CPU_ASM_TABLES + MEMORY_MEASURED
REMADE_IN_7 = ASM_FILES_WITH_X86

# A store of an older version gains the tables added since, when opened: version 2 the
# below-the-kernel, distributed, decisions and subgraph tables, version 3 the decisions and
# subgraph tables, version 4 the subgraph tables (its runs recorded none: a subgraph of theirs
# reads as a graph of its own, as it was recorded), and each of them version 6's.
ADDED_SINCE_VERSION = {
    "2": ASM_TABLES + ASM_INDEXES + DISTRIBUTED_TABLES + DISTRIBUTED_INDEXES + DECISIONS_TABLES + DECISIONS_INDEXES
    + SUBGRAPH_TABLES + SUBGRAPH_INDEXES + ADDED_IN_6 + ADDED_IN_7,
    "3": DECISIONS_TABLES + DECISIONS_INDEXES + SUBGRAPH_TABLES + SUBGRAPH_INDEXES + ADDED_IN_6
    + REMADE_IN_7 + ADDED_IN_7,
    "4": SUBGRAPH_TABLES + SUBGRAPH_INDEXES + ADDED_IN_6 + REMADE_IN_7 + ADDED_IN_7,
    "5": ADDED_IN_6 + REMADE_IN_7 + ADDED_IN_7,
    "6": REMADE_IN_7 + ADDED_IN_7,  # a version-6 run reads as measuring no memory, building no x86
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

# Columns added to an existing store of this schema version when it is opened for
# writing (old rows get NULL; readers accept both).
ADDED_COLUMNS = {
    "runs": [("workspace_from_store", "TEXT")],
    # why: what kept two ops apart besides the scheduler, and a graph break's second graph
    "fusion_refusals": [("cause", "TEXT"), ("other_graph_id", "INTEGER REFERENCES graphs(id) ON DELETE CASCADE")],
}
# The indexes on those columns, made with them.
ADDED_COLUMN_INDEXES = [
    "CREATE INDEX IF NOT EXISTS fusion_refusals_by_other_graph ON fusion_refusals (other_graph_id)",
]

# Everything a new store is made of, in the order it is created.
ALL = (TABLES + ASM_TABLES + DISTRIBUTED_TABLES + DECISIONS_TABLES + SUBGRAPH_TABLES + INDEXES + ASM_INDEXES
       + DISTRIBUTED_INDEXES + DECISIONS_INDEXES + SUBGRAPH_INDEXES + ADDED_IN_6 + ADDED_IN_7)
