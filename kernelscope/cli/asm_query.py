"""`kernelscope query FILE:LINE --asm`, and queries of a stage file's line.

Down: the chain through FILE:LINE, then for each Triton kernel it reaches, what the
kernel lines of its ops became for the run's GPU — the facts of the kernel (config,
registers, spills, shared memory, occupancy), its PTX lines and its SASS instructions;
for each C++ kernel, its x86-64 instructions, the vector width and the loop each line is in.
Kernels not compiled yet are compiled first (by the engine worker).
Up: a line of a stage file (`runs/3/asm/.../k.sass:82`, `.../k.x86:40`) -> its kernel
line(s) -> the chain.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict

from kernelscope.asm import text as asm_text
from kernelscope.asm.model import ALL_STAGES, CpuFacts
from kernelscope.asm.x86 import vector_bits as x86_vector_bits
from kernelscope.cli import asm_ask
from kernelscope.cli.common import open_store, parse_file_line, print_json, print_tree
from kernelscope.render.query_tree import Branch, build_tree
from kernelscope.run_record import SHARED_LINE_REASON_PREFIX
from kernelscope.store.parts.asm_builds import KernelAsmInfo, KernelBelow
from kernelscope.store.results import ASM, LineRef

STAGE_SUFFIXES = tuple(f".{stage}" for stage in ALL_STAGES)
SASS_SHOWN = 16  # SASS instructions listed per kernel line before the rest is summarized


def wanted(args: argparse.Namespace) -> bool:
    """Whether this query is answered here: --asm, or a stage file's line."""
    return bool(getattr(args, "asm", False)) or args.location.rpartition(":")[0].endswith(STAGE_SUFFIXES)


def run(args: argparse.Namespace) -> int:
    path, line = parse_file_line(args.location)
    with open_store(args) as store:
        location = store.locate(path, args.run_id)
        view = store.run(location.run_id)
        if location.kind == ASM:
            return _up(args, view, location, line)
        result = view.query_at(location, line, direction=args.direction, module=args.module,
                               direct_only=args.direct_only, detail=True)
        line_refs = _kernel_line_refs(result)
        kernel_lines = {file: sorted(refs) for file, refs in line_refs.items()}
        if kernel_lines:
            asm_ask.ensure_built(store, result.location.run_id, list(kernel_lines), quiet=args.json)
        belows = [view.asm_below(file, lines) for file, lines in kernel_lines.items()]
    if args.json:
        print_json({**asdict(result), "asm": [asdict(below) for below in belows]})
        return 0
    tree = build_tree(result)
    if result.empty:
        tree.children.append(Branch(f"nothing recorded at this line in run {result.location.run_id}", "yellow"))
    elif not belows:
        tree.children.append(Branch("no Triton kernel computes this line: nothing below Triton "
                                              "(extern calls run library code)", "yellow"))
    else:
        tree.children.append(below_branch(belows, line_refs))
    _print(tree)
    return 0


def _kernel_lines(result) -> dict[str, list[int]]:
    """Stored kernel file -> the kernel lines of the ops the query reached (not the shared
    index and mask lines every op of the kernel uses)."""
    return {file: sorted(refs) for file, refs in _kernel_line_refs(result).items()}


def _kernel_line_refs(result) -> dict[str, dict[int, LineRef]]:
    found: dict[str, dict[int, LineRef]] = {}
    for chain in result.graphs:
        for kernel in chain.kernels:
            if kernel.kind == "extern" or not kernel.file:
                continue
            own = [line for line in kernel.lines if not line.reason.startswith(SHARED_LINE_REASON_PREFIX)]
            for line in own or kernel.lines:
                found.setdefault(kernel.file, {}).setdefault(line.line, line)
    return found


def below_branch(belows: list[KernelBelow], line_refs: dict[str, dict[int, LineRef]] | None = None):
    built = [below.info.facts for below in belows if below.info is not None and below.info.facts]
    cpu = [below.info.cpu for below in belows if below.info is not None and below.info.cpu]
    summary = " · ".join(part for part in (asm_text.kernels_summary(built), asm_text.cpu_kernels_summary(cpu)) if part)
    root = Branch(f"below the kernel: {summary or 'nothing built'}", "bold magenta")
    for below in belows:
        root.children.append(_kernel_branch(below, (line_refs or {}).get(below.kernel_file, {})))
    return root


def _kernel_branch(below: KernelBelow, refs: dict[int, LineRef]):
    info = below.info
    if info is None:
        return Branch(f"kernel {below.kernel}: not compiled below Triton", "yellow")
    if info.cpu is not None:
        return _cpu_kernel_branch(below, info, info.cpu, refs)
    if info.facts is None:
        return Branch(f"kernel {below.kernel}: could not be compiled below Triton: {info.error}", "red")
    facts = info.facts
    branch = Branch(f"kernel {below.kernel}", "bold yellow", [
        Branch(asm_text.facts_line(facts), "yellow"),
        Branch(f"config: {facts.chosen_by}", "dim"),
        Branch(f"instruction mix ({facts.instructions} SASS): {asm_text.mix_text(facts.mix, limit=20)}", "dim"),
        Branch(f"files: {asm_text.stage_files(info.files)}", "dim"),
    ])
    for kernel_line in below.kernel_lines:
        line_branch = _kernel_line_branch(kernel_line, refs)
        of_line = [line for line in below.lines if line.kernel_line == kernel_line]
        for stage in ("ttgir", "ptx"):
            stage_lines = [line for line in of_line if line.stage == stage]
            if stage_lines:
                line_branch.children.append(Branch(
                    f"{stage.upper()} :{asm_text.line_ranges([line.line for line in stage_lines])}  "
                    f"{asm_text.opcode_summary(stage_lines)}", "cyan"))
        sass = [line for line in of_line if line.stage == "sass"]
        if not sass:
            line_branch.children.append(Branch("SASS: no instruction carries this line", "dim"))
        shown = asm_text.notable_first(sass, SASS_SHOWN)
        for line in shown:
            via = f"  [{line.via}]" if line.via else ""
            line_branch.children.append(Branch(f"SASS :{line.line}  {line.text}{via}", "cyan"))
        if len(sass) > len(shown):
            rest = [line for line in sass if line not in shown]
            line_branch.children.append(Branch(f"... {len(rest)} more SASS: {asm_text.opcode_summary(rest)} "
                                               "(--json lists all)", "dim"))
        branch.children.append(line_branch)
    return branch


def _kernel_line_branch(kernel_line: int, refs: dict[int, LineRef]) -> Branch:
    """A kernel line's branch: its number, and its reason, nodes and text where recorded."""
    ref = refs.get(kernel_line)
    label = f"kernel line {kernel_line}"
    if ref is not None:
        label += f"  [{ref.reason}{' ' + ', '.join(ref.nodes) if ref.nodes else ''}]  | {ref.text.strip()}"
    return Branch(label, "bold cyan")


def _cpu_kernel_branch(below: KernelBelow, info: KernelAsmInfo, facts: CpuFacts, refs: dict[int, LineRef]):
    """A C++ kernel built for the CPU: its facts, then per .cpp line its loop, its x86-64
    instructions by class and the widest-vector ones first."""
    branch = Branch(f"kernel {below.kernel}", "bold yellow", [
        Branch(asm_text.cpu_facts_line(facts), "yellow"),
        Branch(f"compiled as Inductor compiles it: {facts.compiler} {facts.command}", "dim"),
        Branch(f"instruction mix ({facts.instructions} x86-64): {asm_text.mix_text(facts.mix, limit=20)}", "dim"),
        Branch(f"files: {asm_text.stage_files(info.files)}", "dim"),
    ])
    for kernel_line in below.kernel_lines:
        line_branch = _kernel_line_branch(kernel_line, refs)
        where = asm_text.loops_at(facts, kernel_line)
        if where:
            line_branch.children.append(Branch(where, "cyan"))
        x86 = [line for line in below.lines if line.kernel_line == kernel_line and line.stage == "x86"]
        if not x86:
            line_branch.children.append(Branch("x86: no instruction carries this line (folded into another "
                                               "line's, or optimized away)", "dim"))
        else:
            line_branch.children.append(Branch(f"x86 :{asm_text.line_ranges([line.line for line in x86])}  "
                                               f"{asm_text.width_summary(x86)}", "cyan"))
        shown = sorted(sorted(x86, key=lambda line: (-x86_vector_bits(line.text), line.line))[:SASS_SHOWN],
                       key=lambda line: line.line)
        for line in shown:
            via = f"  [{line.via}]" if line.via else ""
            line_branch.children.append(Branch(f"x86 :{line.line}  {line.text}{via}", "cyan"))
        if len(x86) > len(shown):
            line_branch.children.append(Branch(f"... {len(x86) - len(shown)} more instructions (--json lists all)",
                                               "dim"))
        branch.children.append(line_branch)
    return branch


def _up(args: argparse.Namespace, view, location, line: int) -> int:
    answer = view.asm_line(location, line, direction=args.direction, module=args.module,
                           direct_only=args.direct_only)
    ref, lines, results = answer.file, answer.lines, answer.chains
    if args.json:
        print_json({"location": asdict(ref), "line": line, "asm_lines": [asdict(asm_line) for asm_line in lines],
                    "kernel_lines": [asdict(result) for result in results]})
        return 0
    text = answer.text
    root = Branch(f"{ref.path}:{line}  ({ref.stage.upper()} of kernel {ref.kernel_name}, run {ref.run_id})",
                            "bold", [Branch(f"| {text}", "dim")])
    if not lines:
        root.children.append(Branch(
            "no kernel line: a declaration, label or directive (instructions carry the kernel lines)", "yellow"))
    for asm_line, result in zip(_first_per_kernel_line(lines), results):
        via = f"  [{asm_line.via}]" if asm_line.via else ""
        up = Branch(f"from kernel line {ref.kernel_file}:{asm_line.kernel_line}{via}", "bold yellow")
        up.children.append(build_tree(result))
        root.children.append(up)
    _print(root)
    return 0


def _first_per_kernel_line(lines):
    seen = {}
    for line in lines:
        seen.setdefault(line.kernel_line, line)
    return [seen[key] for key in sorted(seen)]


def _print(tree) -> None:
    print_tree(tree)
