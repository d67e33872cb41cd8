"""The app's reads of the store: functions run on the store thread, through
`StoreGateway.call(function, *args)` (each takes the thread's `StoreBackend` first).

They read files and answers and hand back plain data (`OpenFile`, line numbers,
titles); the thread workers that call them post it to the UI thread. Headless: no
Textual here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelscope.asm.text import spills_text, vector_text
from kernelscope.errors import StoreError, UserError
from kernelscope.store import StoreBackend
from kernelscope.store.parts.asm_builds import for_a_gpu, is_cpp_kernel
from kernelscope.store.results import SOURCE, RunDetails
from kernelscope.tui.linking import STAGE_NAMES
from kernelscope.tui.run_data import display_path, target_file


@dataclass
class OpenFile:
    """A file to show in a pane, read by a worker."""

    path: str  # stored key
    label: str  # what the pane title shows
    text: str


def read_file(store: StoreBackend, path: str, run_id: int, workspace: str | None = None) -> OpenFile:
    """A file of the run; a source file (`workspace` given) is labelled relative to the workspace."""
    location = store.run(run_id).locate(path)
    text = _read_text(location.absolute_path)
    key = location.path  # one spelling per file, as the store's answers name it
    label = _generated_label(key) if workspace is None else display_path(key, workspace)
    return OpenFile(key, label, text)


def read_kernel(store: StoreBackend, path: str, run_id: int) -> tuple[OpenFile, int]:
    """A kernel file and the line to open it at: its first line that computes a node."""
    file = read_file(store, path, run_id)
    linked = store.run(run_id).file_links(path).lines
    computing = [line.line for line in linked if any(not reason.startswith("shared") for reason in line.reasons)]
    return file, (computing or [line.line for line in linked] or [1])[0]


def read_source(store: StoreBackend, path: str, run_id: int, workspace: str) -> OpenFile:
    """A user source file: through the store when the run recorded nodes in it, else from the workspace."""
    try:
        return read_file(store, path, run_id, workspace)
    except StoreError:
        absolute = path if Path(path).is_absolute() else str(Path(workspace) / path)
        return OpenFile(path, display_path(path, workspace), _read_text(absolute))


def initial_source(store: StoreBackend, details: RunDetails,
                   keep: tuple[str, int] | None) -> tuple[OpenFile | None, int, bool]:
    """The source file to open with a run, the cursor line, and whether that line was kept:
    the kept position when the run has that file, else the run's target file (line 1; the
    first linked line follows with the gutter marks)."""
    run_id = details.summary.id
    candidates = ([keep[0]] if keep else []) + [target_file(details.summary.target)]
    candidates += [brk.file for brk in details.graph_breaks if brk.file]
    for path in candidates:
        try:
            file = read_file(store, path, run_id, details.workspace)
        except (StoreError, UserError):
            continue
        if keep and path == keep[0]:
            return file, keep[1], True
        return file, 1, False
    for kernel in details.kernels:  # a target whose model lives in other files
        if kernel.file:
            for line in store.run(run_id).file_links(kernel.file).lines:
                for chain in store.run(run_id).query(kernel.file, line.line, "up").graphs:
                    for source in chain.sources:
                        return read_file(store, source.file, run_id, details.workspace), source.line, True
    return None, 1, False


def collectives_at(store: StoreBackend, run_id: int, path: str, line: int, origin: str) -> list:
    """The collectives a model, post-grad or wrapper line issues, waits on or needed."""
    view = store.run(run_id)
    if not view.has_collectives():  # most runs: no lookup per cursor move
        return []
    location = view.locate(path)
    if origin == SOURCE:
        return view.file_collectives(location).get(line, [])
    return view.collectives_at(location, line)


def memory_at(store: StoreBackend, run_id: int, path: str, line: int) -> str:
    """What a model line holds ("saves 8.0 KiB for backward · 32.5 KiB live at peak"; '' for nothing)."""
    from kernelscope.render.memory import line_brief

    view = store.run(run_id)
    if view.memory() is None:  # a run that recorded none: no lookup per cursor move
        return ""
    entry = view.file_memory(view.locate(path)).get(line)
    return line_brief(entry) if entry is not None else ""


def asm_of_kernel(store: StoreBackend, run_id: int, kernel: str, lines: list[int],
                  stage: str) -> tuple[OpenFile | None, list[int], str, str]:
    """(the kernel's `stage` file, its lines of the kernel's `lines`, the pane's title, why
    there is no file)."""
    view = store.run(run_id)
    below = view.asm_below(kernel, lines, (stage,))
    name = STAGE_NAMES[stage]
    info = below.info
    if info is None and is_cpp_kernel(kernel):
        return None, [], f"{name}: not built", (
            f"{name}: the C++ kernel {below.kernel} is not compiled yet — press B to compile it with Inductor's "
            f"compiler command in the engine worker (seconds a kernel), or run "
            f"`kernelscope query {kernel}:{lines[0] if lines else 1} --asm`")
    if info is None and not for_a_gpu(view.summary().device):
        return None, [], f"{name}: none", (f"{name}: this run's kernels run on the CPU ({view.summary().device}): "
                                           "there is no PTX or SASS")
    if info is None:
        return None, [], f"{name}: not built", (
            f"{name}: {below.kernel} is not compiled below Triton yet — press B to compile it in the engine "
            f"worker (about 1-2 s a kernel), or run `kernelscope query {kernel}:{lines[0] if lines else 1} --asm`")
    if not info.built:
        return None, [], f"{name}: could not be built", f"{name}: {below.kernel} could not be built: {info.error}"
    path = info.files.get(stage)
    if path is None:
        return None, [], f"{name}: none", f"{name}: the build stored no {name} file"
    file = OpenFile(path, path.rsplit("/", 1)[-1], _read_text(str(view.absolute_path(path))))
    facts, cpu = info.facts, info.cpu
    if cpu is not None:
        title = (f"{name} · {cpu.isa} · widest vectors {vector_text(cpu.vector_bits)} · "
                 f"{cpu.instructions} instructions: {file.label}")
    elif facts is None:
        title = f"{name}: {file.label}"
    else:
        title = (f"{name} · {facts.registers} regs · {spills_text(facts)} · occupancy {facts.occupancy.share:.0%}: "
                 f"{file.label}")
    return file, sorted({line.line for line in below.stage_lines(stage)}), title, ""


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError as error:
        raise StoreError(f"cannot read {path}: {error.strerror} — the file moved or the run was deleted") from error


def _generated_label(path: str) -> str:
    """`runs/3/graphs/0_0_0-forward/kernels/k.py` -> `run 3 · 0_0_0-forward/kernels/k.py`."""
    parts = path.split("/")
    if len(parts) > 3 and parts[0] == "runs" and parts[2] == "graphs":
        return f"run {parts[1]} · " + "/".join(parts[3:])
    return path
