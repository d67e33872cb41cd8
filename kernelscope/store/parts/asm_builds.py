"""Below the kernel in the store: each Triton kernel of a run compiled for the run's GPU
(kernelscope.asm), and each C++ kernel (a stored `.cpp` kernel file: Inductor's cpp backend)
compiled for this machine's CPU (stage `x86`, its facts in `kernel_cpu_asm`), added to the
stored run when first asked for.

A run is written once (writing/writer.py); its kernels' builds come later, one kernel per
transaction, so an answer can be shown as soon as its kernels are built and two
processes asking for the same kernel store it once. Files first (a staging directory
renamed into `runs/<id>/asm/<graph key>/<kernel>/`), rows next, then COMMIT: a reader
sees a kernel's build whole or not at all.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.asm.model import ALL_STAGES, AsmFacts, AsmLine, CpuFacts, KernelAsm, LaunchConfig, Occupancy
from kernelscope.store import paths
from kernelscope.store.database import connection
from kernelscope.store.database.sql import select_in
from kernelscope.store.parts import decisions

BUILDABLE_KINDS = ("triton", "template")  # extern calls run library code: nothing to build
CPP_SUFFIX = ".cpp"  # a kernel stored as a C++ file (Inductor's cpp backend) is built for the CPU: x86


def is_cpp_kernel(kernel_file: str | None) -> bool:
    """Whether a stored kernel file is a C++ kernel (built to x86-64, not below Triton)."""
    return bool(kernel_file) and str(kernel_file).endswith(CPP_SUFFIX)


def for_a_gpu(device: str) -> bool:
    """Whether a run's Triton kernels were generated for an NVIDIA GPU (cuda, virtual-cuda), so
    that they can be built below Triton; cpu-triton kernels run on the CPU."""
    return not str(device).startswith("cpu")


def asm_dir(run_id: int, graph_key: str, kernel_name: str) -> str:
    return (f"{paths.run_dir(run_id)}/asm/{paths.safe_file_name(graph_key)}/"
            f"{paths.safe_file_name(kernel_name)}")


@dataclass
class PendingKernel:
    """A kernel of a stored run that has no build yet: what the engine needs to build it."""

    kernel_id: int
    run_id: int
    name: str
    graph_key: str
    file: str  # the stored kernel file (`runs/3/graphs/.../kernels/<name>.py`, or `.cpp`: a C++ kernel)
    # --target cuda (or replayed from a GPU's decisions: `replayed_from`):
    # {"config", "candidates", "registers", "spills", "shared_bytes", "replayed_from"}
    launch: dict | None


@dataclass
class KernelAsmInfo:
    """A kernel's build as stored: its facts and stage files, or why it could not be built."""

    kernel_id: int
    name: str
    graph_key: str
    kernel_file: str | None
    error: str | None
    facts: AsmFacts | None  # a Triton kernel's build for the GPU
    files: dict[str, str] = field(default_factory=dict)  # stage -> stored path
    build_seconds: float = 0.0
    cpu: CpuFacts | None = None  # a C++ kernel's build for the CPU (stage "x86"; `facts` is None)

    @property
    def built(self) -> bool:
        """Whether the kernel was built (for the GPU or the CPU), not stopped by an error."""
        return self.facts is not None or self.cpu is not None

    @property
    def key(self) -> str:
        return f"{self.graph_key}/{self.name}"


@dataclass
class AsmFileRef:
    """What a stage file is: which kernel of which run, which stage."""

    path: str
    stage: str
    run_id: int
    kernel_id: int
    kernel_name: str
    kernel_file: str
    line_count: int


@connection.reads_damage_as_store_errors
class AsmStore:
    """Reads and writes the builds of one store (one connection, one thread). A database
    damaged past what opening it checked gives the store's one-line error, as RunView's
    reads do."""

    def __init__(self, conn: sqlite3.Connection, root: Path):
        self.conn = conn
        self.root = root
        self.db_path = root / connection.DB_FILE_NAME

    # -- what is left to build ---------------------------------------------------------

    def pending(self, run_id: int, kernel_ids: list[int] | None = None) -> list[PendingKernel]:
        """The run's Triton and C++ kernels (or those of `kernel_ids`) with no build stored yet."""
        sql = """SELECT k.id, k.name, k.file, g.key, l.config_json, l.candidates_json, l.registers, l.spills,
                        l.shared_bytes
                 FROM kernels k JOIN graphs g ON g.id = k.graph_id
                 LEFT JOIN kernel_asm a ON a.kernel_id = k.id
                 LEFT JOIN kernel_launches l ON l.kernel_id = k.id
                 WHERE k.run_id = ? AND a.kernel_id IS NULL AND k.file IS NOT NULL
                   AND (k.kind IN ('triton', 'template') OR k.file LIKE '%.cpp')"""
        rows = self.conn.execute(sql + " ORDER BY g.id, k.position", (run_id,)).fetchall()
        wanted = None if kernel_ids is None else set(kernel_ids)
        rows = [row for row in rows if wanted is None or row[0] in wanted]
        replayed = decisions.replayed_launches(self.conn, [row[0] for row in rows if row[4] is not None])
        return [PendingKernel(row[0], run_id, row[1], row[3], row[2], _launch(row, replayed.get(row[0])))
                for row in rows]

    def kernel_ids_of_files(self, kernel_files: list[str]) -> dict[str, int]:
        """Stored kernel file path -> kernel id."""
        found = {}
        for path in set(kernel_files):
            row = self.conn.execute("SELECT kernel_id FROM files WHERE path = ? AND kind = 'kernel'",
                                    (path,)).fetchone()
            if row is not None:
                found[path] = row[0]
        return found

    # -- writing -------------------------------------------------------------------------

    def write(self, kernel: PendingKernel, built: KernelAsm | None, error: str | None = None,
              seconds: float = 0.0) -> bool:
        """Store one kernel's build (or the error that stopped it); False when another
        process stored it first."""
        directory = asm_dir(kernel.run_id, kernel.graph_key, kernel.name)
        final = self.root / directory
        staging = None
        if built is not None:
            final.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=final.parent))
        moved = False
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute("SELECT 1 FROM kernel_asm WHERE kernel_id = ?", (kernel.kernel_id,)).fetchone():
                self.conn.execute("ROLLBACK")
                return False
            if built is None or staging is None:  # staging: made when (and only when) built is
                self._insert_error(kernel, error or "unknown error", seconds)
            else:
                self._insert_build(kernel, built, directory, staging)
                if final.exists():
                    shutil.rmtree(final)  # left by a write that crashed before its COMMIT
                os.replace(staging, final)
                moved = True
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if moved:
                shutil.rmtree(final, ignore_errors=True)
            raise
        finally:
            if staging is not None and staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return True

    def _insert_error(self, kernel: PendingKernel, error: str, seconds: float) -> None:
        self.conn.execute("INSERT INTO kernel_asm (kernel_id, run_id, error, build_seconds) VALUES (?, ?, ?, ?)",
                          (kernel.kernel_id, kernel.run_id, error, seconds))

    def _insert_build(self, kernel: PendingKernel, built: KernelAsm, directory: str, staging: Path) -> None:
        if isinstance(built.facts, CpuFacts):
            self._insert_cpu_facts(kernel, built, built.facts)
        else:
            self._insert_gpu_facts(kernel, built, built.facts)
        file_name = paths.safe_file_name(kernel.name)
        for stage in ALL_STAGES:
            if stage not in built.stages:
                continue
            text = built.stages[stage]
            data = text.encode("utf-8")
            (staging / f"{file_name}.{stage}").write_bytes(data)
            self.conn.execute(
                "INSERT INTO asm_files (kernel_id, run_id, stage, path, line_count, sha256) VALUES (?, ?, ?, ?, ?, ?)",
                (kernel.kernel_id, kernel.run_id, stage, f"{directory}/{file_name}.{stage}", len(text.splitlines()),
                 hashlib.sha256(data).hexdigest()),
            )
        self.conn.executemany(
            "INSERT INTO asm_lines (kernel_id, stage, line, kernel_line, text, opcode, via) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(kernel.kernel_id, line.stage, line.line, line.kernel_line, line.text, line.opcode, line.via)
             for line in built.lines],
        )

    def _insert_cpu_facts(self, kernel: PendingKernel, built: KernelAsm, facts: CpuFacts) -> None:
        self.conn.execute(
            """INSERT INTO kernel_asm (kernel_id, run_id, error, arch, instructions, mix_json, build_seconds,
                   tools_json) VALUES (?, ?, NULL, ?, ?, ?, ?, ?)""",
            (kernel.kernel_id, kernel.run_id, facts.arch, facts.instructions, _json(facts.mix),
             round(built.build_seconds, 4), _json(built.tools)))
        self.conn.execute(
            """INSERT INTO kernel_cpu_asm (kernel_id, run_id, isa, isa_bits, vector_bits, instructions, mix_json,
                   loops_json, remarks_json, compiler, command) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (kernel.kernel_id, kernel.run_id, facts.isa, facts.isa_bits, facts.vector_bits, facts.instructions,
             _json(facts.mix), _json([loop.to_dict() for loop in facts.loops]), _json(facts.remarks), facts.compiler,
             facts.command))

    def _insert_gpu_facts(self, kernel: PendingKernel, built: KernelAsm, facts: AsmFacts) -> None:
        self.conn.execute(
            """INSERT INTO kernel_asm (kernel_id, run_id, error, arch, config_json, candidates_json, chosen_by,
                   registers, spill_bytes, spill_load_bytes, local_bytes, local_stores, local_loads, shared_bytes,
                   num_warps, num_stages, occupancy_json, instructions, mix_json, gpu_json, build_seconds, tools_json)
               VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (kernel.kernel_id, kernel.run_id, facts.arch, _json(facts.config.to_dict()),
             _json([config.to_dict() for config in facts.candidates]), facts.chosen_by, facts.registers,
             facts.spill_bytes, facts.spill_load_bytes, facts.local_bytes, facts.local_stores, facts.local_loads,
             facts.shared_bytes, facts.num_warps,
             facts.num_stages, _json(_occupancy_dict(facts.occupancy)), facts.instructions, _json(facts.mix),
             None if facts.gpu is None else _json(facts.gpu), round(built.build_seconds, 4), _json(built.tools)),
        )

    # -- reading -------------------------------------------------------------------------

    def infos(self, kernel_ids: list[int]) -> dict[int, KernelAsmInfo]:
        """The stored builds of these kernels (kernels not built yet are left out)."""
        rows = select_in(self.conn, """SELECT a.*, k.name, k.file AS kernel_file, g.key AS graph_key
                                       FROM kernel_asm a JOIN kernels k ON k.id = a.kernel_id
                                       JOIN graphs g ON g.id = k.graph_id WHERE a.kernel_id IN ({})""", kernel_ids)
        return self._infos(rows)

    def run_infos(self, run_id: int) -> dict[int, KernelAsmInfo]:
        """Every stored build of a run, by kernel id."""
        rows = self.conn.execute("""SELECT a.*, k.name, k.file AS kernel_file, g.key AS graph_key
                                    FROM kernel_asm a JOIN kernels k ON k.id = a.kernel_id
                                    JOIN graphs g ON g.id = k.graph_id WHERE a.run_id = ?
                                    ORDER BY g.id, k.position""", (run_id,)).fetchall()
        return self._infos(rows)

    def _infos(self, rows: list[sqlite3.Row]) -> dict[int, KernelAsmInfo]:
        def gpu_built(row) -> bool:
            return not row["error"] and row["arch"] != CPU_ARCH

        infos = {row["kernel_id"]: KernelAsmInfo(row["kernel_id"], row["name"], row["graph_key"], row["kernel_file"],
                                                 row["error"], _facts(row) if gpu_built(row) else None,
                                                 build_seconds=row["build_seconds"]) for row in rows}
        cpu_ids = [row["kernel_id"] for row in rows if not row["error"] and row["arch"] == CPU_ARCH]
        for row in select_in(self.conn, "SELECT * FROM kernel_cpu_asm WHERE kernel_id IN ({})", cpu_ids):
            infos[row["kernel_id"]].cpu = _cpu_facts(row)
        for kernel_id, stage, path in select_in(
                self.conn, "SELECT kernel_id, stage, path FROM asm_files WHERE kernel_id IN ({})", infos, plain=True):
            infos[kernel_id].files[stage] = path
        return infos

    def lines_down(self, kernel_id: int, kernel_lines: list[int],
                   stages: tuple[str, ...] = ALL_STAGES) -> list[AsmLine]:
        """The stage lines that came from these kernel lines, in stage then file order."""
        rows = select_in(self.conn, f"""SELECT stage, line, kernel_line, text, opcode, via FROM asm_lines
                                        WHERE kernel_id = {int(kernel_id)} AND kernel_line IN ({{}})""",
                         kernel_lines, plain=True)
        order = {stage: index for index, stage in enumerate(ALL_STAGES)}
        found = [AsmLine(*row) for row in rows if row[0] in stages]
        return sorted(found, key=lambda line: (order[line.stage], line.line, line.kernel_line))

    def locate(self, key: str) -> AsmFileRef | None:
        """What the stored path `key` is, when it is a stage file."""
        row = self.conn.execute(
            """SELECT f.path, f.stage, f.run_id, f.kernel_id, f.line_count, k.name, k.file
               FROM asm_files f JOIN kernels k ON k.id = f.kernel_id WHERE f.path = ?""", (key,)).fetchone()
        if row is None:
            return None
        return AsmFileRef(row["path"], row["stage"], row["run_id"], row["kernel_id"], row["name"], row["file"],
                          row["line_count"])

    def lines_at(self, ref: AsmFileRef, line: int) -> list[AsmLine]:
        """The kernel line(s) of one stage line (up the chain)."""
        rows = self.conn.execute(
            """SELECT stage, line, kernel_line, text, opcode, via FROM asm_lines
               WHERE kernel_id = ? AND stage = ? AND line = ? ORDER BY kernel_line""",
            (ref.kernel_id, ref.stage, line)).fetchall()
        return [AsmLine(*row) for row in rows]

    def status(self, run_id: int) -> AsmStatus:
        """How many of the run's kernels can be built: its Triton kernels below Triton (none when
        they were generated for the CPU: cpu-triton) and its C++ kernels to x86-64; how many
        are built, failed."""
        device = self.conn.execute("SELECT device FROM runs WHERE id = ?", (run_id,)).fetchone()
        triton = 0 if device is not None and not for_a_gpu(device[0]) else self.conn.execute(
            """SELECT COUNT(*) FROM kernels WHERE run_id = ? AND file IS NOT NULL AND kind IN ('triton', 'template')
                 AND file NOT LIKE '%.cpp'""", (run_id,)).fetchone()[0]
        cpp = self.conn.execute("SELECT COUNT(*) FROM kernels WHERE run_id = ? AND file LIKE '%.cpp'",
                                (run_id,)).fetchone()[0]
        buildable = triton + cpp
        built, failed = self.conn.execute(
            "SELECT COUNT(*) - COUNT(error), COUNT(error) FROM kernel_asm WHERE run_id = ?", (run_id,)).fetchone()
        return AsmStatus(buildable, built or 0, failed or 0)

    def below(self, kernel_file: str, kernel_lines: list[int], stages: tuple[str, ...] = ALL_STAGES) -> KernelBelow:
        """The build of the kernel stored at `kernel_file` and the stage lines of `kernel_lines`."""
        kernel_id = self.kernel_ids_of_files([kernel_file]).get(kernel_file)
        info = None if kernel_id is None else self.infos([kernel_id]).get(kernel_id)
        name = info.name if info is not None else kernel_file.rsplit("/", 1)[-1].removesuffix(".py").removesuffix(
            CPP_SUFFIX)
        lines = (self.lines_down(kernel_id, kernel_lines, stages)
                 if kernel_id is not None and info is not None and info.built else [])
        return KernelBelow(name, kernel_file, sorted(set(kernel_lines)), info, lines)


def _launch(row, replayed_from: str | None) -> dict | None:
    if row[4] is None:
        return None
    return {"config": json.loads(row[4]), "candidates": json.loads(row[5]), "registers": row[6],
            "spills": row[7], "shared_bytes": row[8], "replayed_from": replayed_from}


def _facts(row: sqlite3.Row) -> AsmFacts:
    occupancy = json.loads(row["occupancy_json"])
    return AsmFacts(
        arch=row["arch"],
        config=LaunchConfig.from_dict(json.loads(row["config_json"])),
        candidates=[LaunchConfig.from_dict(config) for config in json.loads(row["candidates_json"])],
        chosen_by=row["chosen_by"],
        registers=row["registers"],
        spill_bytes=row["spill_bytes"],
        spill_load_bytes=row["spill_load_bytes"],
        local_bytes=row["local_bytes"],
        local_stores=row["local_stores"],
        local_loads=row["local_loads"],
        shared_bytes=row["shared_bytes"],
        num_warps=row["num_warps"],
        num_stages=row["num_stages"],
        occupancy=Occupancy(**occupancy),
        instructions=row["instructions"],
        mix=json.loads(row["mix_json"]),
        gpu=None if row["gpu_json"] is None else json.loads(row["gpu_json"]),
    )


CPU_ARCH = "x86-64"  # kernel_asm.arch of a C++ kernel's build


def _cpu_facts(row: sqlite3.Row) -> CpuFacts:
    return CpuFacts.from_dict({
        "arch": CPU_ARCH, "isa": row["isa"], "isa_bits": row["isa_bits"], "vector_bits": row["vector_bits"],
        "instructions": row["instructions"], "mix": json.loads(row["mix_json"]),
        "loops": json.loads(row["loops_json"]), "remarks": json.loads(row["remarks_json"]),
        "compiler": row["compiler"], "command": row["command"]})


def _occupancy_dict(occupancy: Occupancy) -> dict:
    return {"blocks_per_sm": occupancy.blocks_per_sm, "active_warps": occupancy.active_warps,
            "max_warps": occupancy.max_warps, "limited_by": occupancy.limited_by}


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


@dataclass
class KernelBelow:
    """What some lines of one kernel became below Triton."""

    kernel: str  # kernel name
    kernel_file: str
    kernel_lines: list[int]  # the kernel lines asked about
    info: KernelAsmInfo | None  # None: not built yet
    lines: list[AsmLine] = field(default_factory=list)  # their stage lines (ALL_STAGES order)

    def stage_lines(self, stage: str) -> list[AsmLine]:
        return [line for line in self.lines if line.stage == stage]



@dataclass
class AsmStatus:
    """A run's Triton kernels below Triton: how many can be built, are built, could not be."""

    buildable: int  # Triton and template kernels with a file (extern calls run library code; 0 on the CPU)
    built: int
    failed: int  # stored with the reason (cpu-triton kernels, a compile error)

    @property
    def pending(self) -> int:
        return self.buildable - self.built - self.failed


@dataclass
class AsmLineAnswer:
    """One line of a stage file, up the chain: its kernel line(s) and their chains."""

    file: AsmFileRef
    line: int
    text: str  # the stage file's line as written
    lines: list[AsmLine]  # one per kernel line the stage line came from (none: a label, directive)
    chains: list  # QueryResult of each kernel line, in kernel line order

    @property
    def kernel_lines(self) -> list[int]:
        return sorted({line.kernel_line for line in self.lines})
