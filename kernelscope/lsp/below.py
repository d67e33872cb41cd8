"""Below the kernel in the language server: what a model line's kernels use (registers,
spills; a C++ kernel's vector width), the PTX and SASS lines of a kernel line (a C++
kernel line's x86-64 instructions), and a stage file's line up the chain.

Everything is read through the read model (RunView.asm_*); nothing is built here. A
kernel without a build is answered with how to build it (the `kernelscope.buildAsm`
command, or `query --asm`): a hover never waits on a compile. In an untrusted workspace
(`trusted: false`), where the server refuses every build, it says instead that building
is off until the workspace is trusted.
"""
from __future__ import annotations

from kernelscope.asm import text as asm_text
from kernelscope.asm.model import AsmFacts, AsmLine, CpuFacts
from kernelscope.lsp.render import Link, generated_hover, spans
from kernelscope.store import RunView
from kernelscope.store.parts.asm_builds import AsmLineAnswer, KernelAsmInfo, KernelBelow, for_a_gpu, is_cpp_kernel
from kernelscope.store.reading.source_index import KernelHit, LineAnswer

BUILDABLE = ("triton", "template", "cpp")  # extern calls run library code: nothing below them
STAGE_NAMES = {"ttir": "TTIR", "ttgir": "TTGIR", "ptx": "PTX", "sass": "SASS", "x86": "x86-64"}
# What hovers, definitions and highlights go to: a Triton kernel's PTX and SASS, a C++ kernel's x86-64.
SHOWN_STAGES = ("ptx", "sass", "x86")
MAX_KERNELS = 3  # kernels listed with their facts in a model line's hover
MAX_RANGES = 100  # runs of consecutive lines per stage file in a definition answer
UNTRUSTED_HINT = ("building is off until the workspace is trusted "
                  "(kernelscope compiles nothing in an untrusted workspace)")


def how_to_build(path: str, line: int, trusted: bool = True) -> str:
    """How to build the kernels of `path`:`line` below Triton; in an untrusted workspace
    (`trusted` False), that building is off (the server refuses `kernelscope.buildAsm`)."""
    if not trusted:
        return UNTRUSTED_HINT
    return ("run the command *kernelscope: Build PTX/SASS* (`kernelscope.buildAsm`), "
            f"or `kernelscope query {path}:{line} --asm`")


def buildable(view: RunView) -> bool:
    """Whether the run's kernels can be compiled below the kernel at all: Triton kernels for a
    GPU (cpu-triton kernels run on the CPU: none), C++ kernels for this CPU."""
    return for_a_gpu(view.summary().device) or view.asm_status().buildable > 0


def kernel_hits(answer: LineAnswer) -> list:
    """The Triton and C++ kernels a model line reached (KernelHit), one per kernel."""
    seen, hits = set(), []
    for graph in answer.graphs:
        for hit in graph.kernels:
            if (hit.kernel.kind in BUILDABLE or is_cpp_kernel(hit.kernel.file)) and hit.kernel.file \
                    and hit.kernel.id not in seen:
                seen.add(hit.kernel.id)
                hits.append(hit)
    return hits


def source_line_text(view: RunView, answer: LineAnswer, link: Link, trusted: bool = True) -> str:
    """The hover's part about a model line's kernels below Triton: `3 kernels · max 96
    registers · 0 spills`, each kernel's facts with a link to its first SASS line of the
    line's ops; or what is not built yet and how to build it (`trusted`: see how_to_build).
    "" when the line reached no Triton kernel."""
    hits = kernel_hits(answer)
    if not hits or not buildable(view):
        return ""
    builds = view.asm_builds([hit.kernel.id for hit in hits])
    built: list[tuple[KernelHit, KernelAsmInfo, AsmFacts]] = []  # (hit, its build, the build's facts)
    cpu: list[tuple[KernelHit, KernelAsmInfo, CpuFacts]] = []  # C++ kernels built for the CPU
    failed: list[KernelAsmInfo] = []
    for hit in hits:
        info = builds.get(hit.kernel.id)
        if info is not None and info.facts:
            built.append((hit, info, info.facts))
        elif info is not None and info.cpu:
            cpu.append((hit, info, info.cpu))
        elif info is not None:
            failed.append(info)
    missing = len(hits) - len(built) - len(cpu) - len(failed)
    lines = []
    if cpu:
        lines.append(f"**below the kernel**: {asm_text.cpu_kernels_summary([cpu_facts for _, _, cpu_facts in cpu])}")
        for hit, info, cpu_facts in cpu[:MAX_KERNELS]:
            lines.append(f"- {_cpu_kernel_facts(view, hit, info, cpu_facts, link)}")
    if built:
        head = asm_text.kernels_summary([facts for _, _, facts in built])
        lines.append(f"**below the kernel** ({built[0][2].arch}): {head}")
        for hit, info, facts in built[:MAX_KERNELS]:
            lines.append(f"- {_kernel_facts(view, hit, info, facts, link)}")
        if len(built) > MAX_KERNELS:
            lines.append(f"- … {len(built) - MAX_KERNELS} more")
    if failed:
        lines.append(f"**below the kernel**: {len(failed)} kernel(s) could not be built: {failed[0].error}")
    if missing:
        what = "PTX/SASS" if not lines else f"{missing} more kernel(s)"
        how = how_to_build(answer.path, answer.line, trusted)
        lines.append(f"**{what}**: not built yet — {how}" if not lines else f"{what} not built yet — {how}")
    return "\n".join(lines)


def _kernel_facts(view: RunView, hit, info: KernelAsmInfo, facts: AsmFacts, link: Link) -> str:
    text = (f"`{info.name}` {facts.registers} registers · {asm_text.spills_text(facts)} · "
            f"occupancy {facts.occupancy.share:.0%}")
    below = view.asm_below(hit.kernel.file, sorted(set(hit.lines)), ("sass",))
    sass = below.stage_lines("sass")
    if sass and info.files.get("sass"):
        first = asm_text.most_notable(sass)
        text += f" · [SASS :{first.line} `{first.opcode}`]({link(info.files['sass'], first.line)})"
        opcodes = asm_text.opcode_summary(sass, limit=3)
        text += f" ({opcodes})"
    return text


def _cpu_kernel_facts(view: RunView, hit, info: KernelAsmInfo, facts: CpuFacts, link: Link) -> str:
    """`cpp_fused_gelu_0` ISA avx512 · widest vectors zmm (512-bit) · [x86 :44 `vmulps`] (...)."""
    text = f"`{info.name}` ISA {facts.isa} · widest vectors {asm_text.vector_text(facts.vector_bits)}"
    x86 = view.asm_below(hit.kernel.file, sorted(set(hit.lines)), ("x86",)).stage_lines("x86")
    if x86 and info.files.get("x86"):
        first = asm_text.most_vector(x86)
        text += f" · [x86 :{first.line} `{first.opcode}`]({link(info.files['x86'], first.line)})"
        text += f" ({asm_text.width_summary(x86)})"
    return text


def _cpu_kernel_line_text(below: KernelBelow, info: KernelAsmInfo, facts: CpuFacts, line: int, link: Link) -> str:
    """A C++ kernel line's hover part: the kernel's facts, the loop the line is in and its
    x86-64 instructions by class, linked to the widest-vector one."""
    out = [f"**below the kernel**: {asm_text.cpu_facts_line(facts)}"]
    where = asm_text.loops_at(facts, line)
    if where:
        out.append(f"- {where}")
    x86 = below.stage_lines("x86")
    path = info.files.get("x86")
    if not x86 or not path:
        out.append("- x86-64: no instruction comes from this line (folded into another line's, or optimized away)")
        return "\n".join(out)
    first = asm_text.most_vector(x86)
    numbers = asm_text.line_ranges([asm_line.line for asm_line in x86], limit=4)
    out.append(f"- [x86-64 :{numbers}]({link(path, first.line)}) {asm_text.width_summary(x86)}")
    return "\n".join(out)


def kernel_line_text(view: RunView, kernel_file: str, line: int, link: Link, trusted: bool = True) -> str:
    """The hover's part about one kernel line: its PTX and SASS lines and the kernel's facts,
    or how to build them (`trusted`: see how_to_build)."""
    if not buildable(view):
        return ""
    below = view.asm_below(kernel_file, [line], SHOWN_STAGES)
    info = below.info
    if info is None:
        return f"**PTX/SASS**: not built yet — {how_to_build(kernel_file, line, trusted)}"
    if info.cpu is not None:
        return _cpu_kernel_line_text(below, info, info.cpu, line, link)
    if info.facts is None:
        return f"**PTX/SASS**: could not be built: {info.error}"
    out = [f"**below the kernel**: {asm_text.facts_line(info.facts)}"]
    for stage in ("ptx", "sass"):
        stage_lines = below.stage_lines(stage)
        path = info.files.get(stage)
        if not stage_lines or not path:
            out.append(f"- {STAGE_NAMES[stage]}: no line comes from this kernel line")
            continue
        first = asm_text.most_notable(stage_lines) if stage == "sass" else stage_lines[0]
        numbers = asm_text.line_ranges([asm_line.line for asm_line in stage_lines], limit=4)
        out.append(f"- [{STAGE_NAMES[stage]} :{numbers}]({link(path, first.line)}) "
                   f"{asm_text.opcode_summary(stage_lines, limit=4)}")
    return "\n".join(out)


def stage_ranges(below: KernelBelow) -> list[tuple[str, int, int]]:
    """(stage file, first line, last line) of each run of consecutive stage lines, PTX then
    SASS, at most MAX_RANGES per file: where a kernel line's definition lands."""
    found: list[tuple[str, int, int]] = []
    if below.info is None:
        return found
    for stage in SHOWN_STAGES:
        path = below.info.files.get(stage)
        numbers = sorted({line.line for line in below.stage_lines(stage)})
        if not path or not numbers:
            continue
        found += [(path, first, last) for first, last in spans(numbers)[:MAX_RANGES]]
    return found


def stage_file_hover(answer: AsmLineAnswer, run_label: str, link: Link) -> str:
    """A stage file's line: what it is, the kernel line(s) it came from, and their chains up
    to the model (as a kernel line's hover words them)."""
    ref = answer.file
    stage = STAGE_NAMES.get(ref.stage, ref.stage)
    name = ref.path.rsplit("/", 1)[-1]
    lines = [f"**kernelscope** · {run_label} · {stage} of kernel `{ref.kernel_name}` · `{name}:{answer.line}`",
             "", f"`{answer.text}`" if answer.text else "(an empty line)"]
    if not answer.lines:
        lines.append("\nno kernel line: a declaration, label or directive (instructions carry the kernel lines)")
        return "\n".join(lines)
    for asm_line, chain in zip(_first_per_kernel_line(answer), answer.chains):
        via = f" · {asm_line.via}" if asm_line.via else ""
        code = chain.text.strip()
        lines.append("")
        lines.append(f"from kernel line [{asm_line.kernel_line}]({link(ref.kernel_file, asm_line.kernel_line)})"
                     + (f" `{code}`" if code else "") + via)
        body = generated_hover(chain, None, link).split("\n", 1)
        if len(body) > 1 and body[1].strip():
            lines.append(body[1].strip("\n"))
    return "\n".join(lines)


def _first_per_kernel_line(answer: AsmLineAnswer) -> list:
    seen: dict[int, AsmLine] = {}
    for line in answer.lines:
        seen.setdefault(line.kernel_line, line)
    return [seen[key] for key in sorted(seen)]


def stage_file_lens(view: RunView, location) -> str:
    """`SASS of triton_per_fused_... · 40 registers · 0 spills · occupancy 75%`."""
    ref = view.asm_file(location)
    if ref is None:
        return ""
    builds = view.asm_builds([ref.kernel_id])
    info = builds.get(ref.kernel_id)
    facts = ""
    if info is not None and info.facts:
        facts = f" · {asm_text.facts_line(info.facts)}"
    elif info is not None and info.cpu:
        facts = f" · {asm_text.cpu_facts_line(info.cpu)}"
    return f"{STAGE_NAMES.get(ref.stage, ref.stage)} of {ref.kernel_name}{facts}"


def kernel_facts_suffix(view: RunView, kernel_id: int) -> str:
    """` · 40 registers · 0 spills` for a kernel's lens when it is built ("" otherwise)."""
    info = view.asm_builds([kernel_id]).get(kernel_id)
    if info is not None and info.cpu is not None:
        return f" · {info.cpu.isa} · widest vectors {asm_text.vector_text(info.cpu.vector_bits)}"
    if info is None or info.facts is None:
        return ""
    return f" · {info.facts.registers} registers · {asm_text.spills_text(info.facts)}"

