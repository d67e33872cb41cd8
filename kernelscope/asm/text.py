"""Below-the-kernel facts as short text, the same in the CLI, hovers and the TUI."""
from __future__ import annotations

from collections import Counter

from kernelscope.asm.facts import instruction_class
from kernelscope.asm.model import AsmFacts, AsmLine, CpuFacts
from kernelscope.asm.x86 import instruction_mix, vector_bits

# Instruction classes worth naming first when a line's instructions are summarized.
NOTABLE_CLASSES = ("tensor core", "special function", "local memory", "global load", "global store",
                   "shared memory", "atomics", "warp shuffle/vote", "barrier/sync")


def size_text(count: int) -> str:
    if count >= 1024 and count % 1024 == 0:
        return f"{count // 1024} KB"
    return f"{count / 1024:.1f} KB" if count >= 1024 else f"{count} B"


def spills_text(facts: AsmFacts) -> str:
    """`0 spills`, `64 B spilled` (bytes of spill stores per thread), and local memory when
    the kernel keeps arrays there (libdevice's sin/cos range reduction does)."""
    text = f"{facts.spill_bytes} B spilled" if facts.spill_bytes else "0 spills"
    if facts.local_bytes:
        text += f" ({facts.local_bytes} B local memory, {facts.local_stores} STL, {facts.local_loads} LDL)"
    return text


def facts_line(facts: AsmFacts) -> str:
    """`sm_90 · XBLOCK=256 num_warps=4 num_stages=1 · 14 registers · 0 spills · 0 B shared ·
    occupancy 100% (64/64 warps, limited by warps)`."""
    occupancy = facts.occupancy
    return (f"{facts.arch} · {facts.config.label} · {facts.registers} registers · {spills_text(facts)} · "
            f"{size_text(facts.shared_bytes)} shared · occupancy {occupancy.share:.0%} "
            f"({occupancy.active_warps}/{occupancy.max_warps} warps, limited by {occupancy.limited_by})")


def mix_text(mix: dict[str, int], limit: int = 6) -> str:
    """`fp32 42 · integer 17 · special function 4 · ...` (largest first)."""
    items = sorted(mix.items(), key=lambda item: (-item[1], item[0]))
    shown = " · ".join(f"{name} {count}" for name, count in items[:limit])
    return shown + (f" · +{len(items) - limit} more classes" if len(items) > limit else "")


def kernels_summary(all_facts: list[AsmFacts]) -> str:
    """`3 kernels · max 96 registers · 0 spills` for the kernels of one model line."""
    if not all_facts:
        return ""
    spilling = [facts for facts in all_facts if facts.spill_bytes]
    spills = f"{len(spilling)} spilling ({max(f.spill_bytes for f in spilling)} B max)" if spilling else "0 spills"
    count = len(all_facts)
    return (f"{count} kernel{'s' if count != 1 else ''} · max {max(f.registers for f in all_facts)} registers · "
            f"{spills}")


def opcode_summary(lines: list[AsmLine], limit: int = 6) -> str:
    """`MUFU.EX2 ×2 · MUFU.RCP ×2 · FFMA.FTZ ×12 · ...`: notable classes first, then the most used."""
    counts = Counter(line.opcode for line in {(line.line, line.opcode): line for line in lines}.values())

    def order(item):
        opcode, count = item
        kind = instruction_class(opcode)
        rank = NOTABLE_CLASSES.index(kind) if kind in NOTABLE_CLASSES else len(NOTABLE_CLASSES)
        return (rank, -count, opcode)

    items = sorted(counts.items(), key=order)
    shown = " · ".join(f"{opcode} ×{count}" for opcode, count in items[:limit])
    return shown + (f" · +{len(items) - limit} more" if len(items) > limit else "")


def notable_first(lines: list[AsmLine], limit: int) -> list[AsmLine]:
    """At most `limit` SASS lines, in file order: the notable instructions (tensor core,
    special function, memory, ...) first chosen, then the others."""
    notable = [line for line in lines if instruction_class(line.opcode) in NOTABLE_CLASSES]
    rest = [line for line in lines if instruction_class(line.opcode) not in NOTABLE_CLASSES]
    chosen = {id(line) for line in (notable + rest)[:limit]}
    return [line for line in lines if id(line) in chosen]


def most_notable(lines: list[AsmLine]) -> AsmLine:
    """The first instruction of the most notable class among `lines` (tensor core, then
    special function, ...; the first line when none is notable): where a link lands."""
    def rank(line: AsmLine) -> tuple[int, int]:
        kind = instruction_class(line.opcode)
        return (NOTABLE_CLASSES.index(kind) if kind in NOTABLE_CLASSES else len(NOTABLE_CLASSES), line.line)

    return min(lines, key=rank)


def line_ranges(numbers: list[int], limit: int = 8) -> str:
    """[1, 2, 3, 7] -> '1-3, 7' (at most `limit` ranges, then how many lines more)."""
    numbers = sorted(set(numbers))
    parts, start = [], None
    for index, number in enumerate(numbers):
        if start is None:
            start = number
        if index + 1 == len(numbers) or numbers[index + 1] != number + 1:
            parts.append((start, number))
            start = None
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts[:limit])
    rest = sum(b - a + 1 for a, b in parts[limit:])
    return shown + (f", ... (+{rest} lines)" if rest else "")


def stage_files(files: dict[str, str]) -> str:
    """`runs/1/asm/0_0_0-inference/k/k.{ttir,ttgir,ptx,sass}`."""
    from kernelscope.asm.model import ALL_STAGES

    paths = [files[stage] for stage in ALL_STAGES if stage in files]
    if not paths:
        return "(none)"
    if len(paths) == 1:  # a C++ kernel's one file: runs/3/asm/<graph>/<kernel>/<kernel>.x86
        return paths[0]
    stem = paths[0].rsplit(".", 1)[0]
    if all(path.rsplit(".", 1)[0] == stem for path in paths):
        return f"{stem}.{{{','.join(path.rsplit('.', 1)[1] for path in paths)}}}"
    return ", ".join(paths)


# -- C++ kernels built for the CPU (kernelscope.asm.x86) -------------------------------------

_REGISTER_NAMES = {512: "zmm", 256: "ymm", 128: "xmm"}


def vector_text(bits: int) -> str:
    """512 -> `zmm (512-bit)`; 0 -> `no vector registers`."""
    return f"{_REGISTER_NAMES[bits]} ({bits}-bit)" if bits in _REGISTER_NAMES else "no vector registers"


def cpu_facts_line(facts: CpuFacts) -> str:
    """`x86-64 · ISA avx512 (512-bit) · widest vectors zmm (512-bit) · 272 instructions ·
    3 loops, 2 vectorized (16 lanes), 2 masked tails`."""
    vectorized = [loop for loop in facts.loops if loop.kind == "vectorized"]
    tails = sum(len(loop.tail_lines) for loop in vectorized)
    lanes = sorted({loop.step for loop in vectorized})
    loops = f"{len(facts.loops)} loop{'s' if len(facts.loops) != 1 else ''}"
    if vectorized:
        loops += (f", {len(vectorized)} vectorized ({'/'.join(map(str, lanes))} lanes)"
                  f"{f', {tails} masked tail' + ('s' if tails != 1 else '') if tails else ''}")
    remarks = f" · compiler vectorized {len(facts.remarks)} more" if facts.remarks else ""
    return (f"{facts.arch} · ISA {facts.isa} ({facts.isa_bits}-bit) · widest vectors {vector_text(facts.vector_bits)}"
            f" · {facts.instructions} instructions · {loops}{remarks}")


def cpu_kernels_summary(all_facts: list[CpuFacts]) -> str:
    """`2 C++ kernels · x86-64 avx512 · widest vectors zmm (512-bit)`."""
    if not all_facts:
        return ""
    count = len(all_facts)
    widest = max(facts.vector_bits for facts in all_facts)
    return (f"{count} C++ kernel{'s' if count != 1 else ''} · {all_facts[0].arch} {all_facts[0].isa} · "
            f"widest vectors {vector_text(widest)}")


def loops_at(facts: CpuFacts, line: int) -> str:
    """Where a .cpp line sits in the kernel's loops: `vectorized loop x1 (line 50, 16 lanes) ·
    masked tail (line 58)`; "" outside every loop."""
    inside = [loop for loop in facts.loops if loop.line <= line <= loop.end_line]
    if not inside:
        return ""
    loop = max(inside, key=lambda found: found.line)  # the innermost
    if loop.kind == "vectorized":
        text = f"vectorized loop {loop.variable} (line {loop.line}, {loop.step} lanes"
        text += ", a reduction)" if loop.reduction else ")"
        tails = [tail for tail in loop.tail_lines if tail <= line]
        if tails:
            text += f" · masked tail (line {tails[-1]})"
    else:
        text = f"scalar loop {loop.variable} (line {loop.line})"
    remarks = [remark["text"] for remark in facts.remarks if remark["line"] == line]
    return text + (f" · compiler: {remarks[0]}" if remarks else "")


def width_summary(lines: list[AsmLine]) -> str:
    """`12 instructions: zmm 8 · other 3 · call 1`: a .cpp line's x86 instructions by class."""
    unique = {line.line: line for line in lines}.values()
    mix = instruction_mix([line.text for line in unique])
    return f"{len(unique)} instruction{'s' if len(unique) != 1 else ''}: {mix_text(mix)}"


def most_vector(lines: list[AsmLine]) -> AsmLine:
    """The first instruction using the widest vector registers among `lines` (a link's target)."""
    return min(lines, key=lambda line: (-vector_bits(line.text), line.line))
