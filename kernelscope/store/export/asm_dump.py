"""Below the kernel in a dump (schema 4.0; 8.0 added C++ kernels): each kernel's `launch`
(--target cuda) and `asm` (its build for the run's GPU: facts and stage files; a C++
kernel's build for the CPU: ISA, vector width, loops and its x86 file), or null."""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

from kernelscope.asm.model import CPU_STAGES, STAGES
from kernelscope.errors import StoreError
from kernelscope.store import paths
from kernelscope.store.parts import decisions
from kernelscope.store.parts.asm_builds import CPU_ARCH

_PACKAGE_PREFIX = re.compile(r"[^\s\"'()\[\]]*?/(?:site|dist)-packages/")


_PTX_DEBUG_SECTIONS = re.compile(r"^\s*\.section\s+\.debug_", re.MULTILINE)


def portable_stage_text(text: str, root: Path, run_id: int, portable) -> str:
    """A stage file's text without what ties it to one store, run or machine: the kernel
    file it names becomes run-relative, installed packages `<site-packages>/...`, and the
    PTX's DWARF sections (file names spelled out as bytes) are left out."""
    debug = _PTX_DEBUG_SECTIONS.search(text)
    if debug is not None:
        text = text[:debug.start()]
    text = text.replace(f"{Path(root).as_posix()}/{paths.run_dir(run_id)}/", "")
    return portable(_PACKAGE_PREFIX.sub("<site-packages>/", text))


def launches(conn: sqlite3.Connection, graph_id: int, portable=lambda text: text) -> dict[int, dict]:
    """kernel id -> its `launch` (--target cuda runs, and virtual-cuda runs that replayed one:
    `replayed_from` names the decisions)."""
    rows = conn.execute(
        """SELECT l.* FROM kernel_launches l JOIN kernels k ON k.id = l.kernel_id WHERE k.graph_id = ?""",
        (graph_id,)).fetchall()
    replayed = decisions.replayed_launches(conn, [row["kernel_id"] for row in rows])
    return {row["kernel_id"]: {"config": json.loads(row["config_json"]),
                               "candidates": json.loads(row["candidates_json"]), "registers": row["registers"],
                               "spills": row["spills"], "shared_bytes": row["shared_bytes"],
                               "replayed_from": portable(replayed[row["kernel_id"]]) if row["kernel_id"] in replayed
                               else None} for row in rows}


def builds(conn: sqlite3.Connection, root: Path, run_id: int, graph_id: int, portable,
           absolute_paths: bool) -> dict[int, dict]:
    """kernel id -> its `asm` for the kernels of the graph that were built below Triton."""
    files: dict[int, dict[str, dict]] = {}
    for row in conn.execute("""SELECT f.* FROM asm_files f JOIN kernels k ON k.id = f.kernel_id
                               WHERE k.graph_id = ?""", (graph_id,)):
        files.setdefault(row["kernel_id"], {})[row["stage"]] = _file_ref(row, root, run_id, portable, absolute_paths)
    found = {}
    for row in conn.execute("""SELECT a.* FROM kernel_asm a JOIN kernels k ON k.id = a.kernel_id
                               WHERE k.graph_id = ?""", (graph_id,)):
        if row["error"] is not None:
            found[row["kernel_id"]] = {"error": row["error"]}
            continue
        if row["arch"] == CPU_ARCH:
            found[row["kernel_id"]] = _cpu_build(conn, row["kernel_id"], files.get(row["kernel_id"], {}))
            continue
        found[row["kernel_id"]] = {
            "arch": row["arch"], "config": json.loads(row["config_json"]),
            "candidates": json.loads(row["candidates_json"]), "chosen_by": row["chosen_by"],
            "registers": row["registers"], "spill_bytes": row["spill_bytes"],
            "spill_load_bytes": row["spill_load_bytes"], "local_bytes": row["local_bytes"],
            "local_stores": row["local_stores"], "local_loads": row["local_loads"],
            "shared_bytes": row["shared_bytes"], "num_warps": row["num_warps"],
            "num_stages": row["num_stages"], "occupancy": json.loads(row["occupancy_json"]),
            "instructions": row["instructions"], "mix": json.loads(row["mix_json"]),
            "gpu": None if row["gpu_json"] is None else json.loads(row["gpu_json"]),
            "files": {stage: files.get(row["kernel_id"], {}).get(stage) for stage in STAGES},
        }
    return found


def _cpu_build(conn: sqlite3.Connection, kernel_id: int, files: dict[str, dict]) -> dict:
    """A C++ kernel's `asm`: its CPU facts and x86 file (the compile command, which names this
    machine's include directories, stays in the store)."""
    row = conn.execute("SELECT * FROM kernel_cpu_asm WHERE kernel_id = ?", (kernel_id,)).fetchone()
    return {"arch": CPU_ARCH, "isa": row["isa"], "isa_bits": row["isa_bits"], "vector_bits": row["vector_bits"],
            "instructions": row["instructions"], "mix": json.loads(row["mix_json"]),
            "loops": json.loads(row["loops_json"]), "remarks": json.loads(row["remarks_json"]),
            "compiler": row["compiler"], "files": {stage: files.get(stage) for stage in CPU_STAGES}}


def _file_ref(row: sqlite3.Row, root: Path, run_id: int, portable, absolute_paths: bool) -> dict:
    on_disk = paths.generated_path(root, row["path"])
    try:
        text = on_disk.read_bytes().decode("utf-8")
    except OSError as error:
        raise StoreError(f"the store lost {on_disk} ({error.strerror}): delete the run's builds by "
                         "recording again, or delete the run with `kernelscope runs`") from error
    run_dir = paths.run_dir(run_id)
    path = on_disk.absolute().as_posix() if absolute_paths else row["path"][len(run_dir) + 1:]
    digest = hashlib.sha256(portable_stage_text(text, root, run_id, portable).encode("utf-8")).hexdigest()
    return {"path": path, "portable_sha256": digest, "lines": row["line_count"]}
