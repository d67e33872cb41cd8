"""Below a C++ kernel (Inductor's cpp backend): its x86-64 instructions mapped to the
kernel's .cpp lines, the vector width they use, and the kernel's loops.

Nothing here imports torch: these functions read what the engine's build
(kernelscope/engine/cpu_asm_build.py) got from the compiler Inductor uses (g++ with
Inductor's own flags, plus `-g`) and from binutils' `objdump -d -l --inlines`.

The line map comes from the object's DWARF line table, as objdump prints it: before the
instructions of each source location, the innermost location (`.../vec512_float.h:178`)
then the chain of call sites it was inlined into (`inlined by /.../k.cpp:27 (kernel)`).
An instruction belongs to the innermost kernel-file line of that chain, so the loads,
`exp` and stores that `at::vec::Vectorized<float>` inlines from ATen's headers land on the
kernel line that called them, and `via` names the header lines (`inlined from
avx512fintrin.h:6333 <- ATen/cpu/vec/vec512/vec512_float.h:178`).
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

from kernelscope.asm.model import AsmLine, CppLoop, CpuFacts, KernelAsm

STAGE = "x86"

_FUNCTION_START = re.compile(r"^[0-9a-f]+ <(.*)>:\s*$")
_SECTION = re.compile(r"^Disassembly of section ")
_INSTRUCTION = re.compile(r"^\s+([0-9a-f]+):\t(.*?)\s*$")
_LOCATION = re.compile(r"^(\S.*?):(\d+)(?: \(discriminator \d+\))?\s*$")
_INLINED_BY = re.compile(r"^inlined by (\S.*?):(\d+)(?: \(discriminator \d+\))?(?: \(.*\))?\s*$")
_PREFIXES = {"rep", "repz", "repe", "repnz", "repne", "lock", "data16", "cs", "ds", "ss", "es", "fs", "gs",
             "notrack", "bnd", "addr32"}


@dataclass
class Disassembly:
    """The kernel's functions out of one object file's disassembly."""

    text: str  # what is stored: the kept functions as objdump printed them (tabs expanded)
    lines: list[AsmLine]  # each instruction of `text` with its kernel line
    instructions: list[str]  # every instruction of the kept functions, mapped or not


def _same_file(path: str, kernel_path: str) -> bool:
    return os.path.normpath(path) == os.path.normpath(kernel_path)


def disassembly(objdump_text: str, kernel_path: str, source_lines: int) -> Disassembly:
    """The functions of `objdump -d -l --inlines` output that hold the kernel's code: those
    with an instruction coming from a line 1..`source_lines` of `kernel_path` (the kernel
    function, its OpenMP-outlined bodies `kernel._omp_fn.N` and its `.cold` part); the
    Python bindings Inductor appends, static initializers and library code are left out."""
    functions: list[list[str]] = []
    current: list[str] | None = None
    for line in objdump_text.splitlines():
        if _FUNCTION_START.match(line):
            current = [line]
            functions.append(current)
        elif _SECTION.match(line):
            current = None
        elif current is not None:
            current.append(line.expandtabs(8) if _INSTRUCTION.match(line) is None else line)
    kept: list[str] = []
    lines: list[AsmLine] = []
    instructions: list[str] = []
    for function in functions:
        mapped = _map_function(function, kernel_path, source_lines)
        if not any(kernel_line is not None for kernel_line, _, _ in mapped.values()):
            continue
        if kept:
            kept.append("")
        offset = len(kept)
        for index, raw in enumerate(function):
            match = _INSTRUCTION.match(raw)
            if match is None:
                kept.append(raw)
                continue
            text = _instruction_text(match.group(2))
            kept.append(f"{match.group(1):>8}:  {text}")
            instructions.append(text)
            kernel_line, via, _ = mapped[index]
            if kernel_line is not None:
                lines.append(AsmLine(STAGE, offset + index + 1, kernel_line, text, opcode(text), via))
    return Disassembly("\n".join(kept) + ("\n" if kept else ""), lines, instructions)


def _map_function(function: list[str], kernel_path: str,
                  source_lines: int) -> dict[int, tuple[int | None, str, list]]:
    """Index of each instruction line of one function -> (kernel line or None, via, frames)."""
    frames: list[tuple[str, int]] = []  # innermost first
    after_instruction = False
    found = {}
    for index, line in enumerate(function):
        match = _INSTRUCTION.match(line)
        if match is not None:
            found[index] = (*_kernel_line(frames, kernel_path, source_lines), frames)
            after_instruction = True
            continue
        inlined = _INLINED_BY.match(line)
        if inlined is not None:
            if after_instruction:  # objdump repeats the call chain under an unchanged innermost line
                frames = frames[:1]
            frames = [*frames, (inlined.group(1), int(inlined.group(2)))]
            after_instruction = False
            continue
        location = _LOCATION.match(line)
        if location is not None and not line.endswith(":"):
            frames = [(location.group(1), int(location.group(2)))]
            after_instruction = False
    return found


def _kernel_line(frames: list[tuple[str, int]], kernel_path: str, source_lines: int) -> tuple[int | None, str]:
    for depth, (path, line) in enumerate(frames):
        if _same_file(path, kernel_path):
            if not 1 <= line <= source_lines:
                return None, ""  # the Python bindings Inductor appends to the kernel's text
            if depth == 0:
                return line, ""
            chain = [f"{_short(path)}:{line}" for path, line in frames[:depth]]
            if len(chain) > 3:  # the innermost two and the one the kernel line called
                chain = [*chain[:2], "...", chain[-1]]
            return line, f"inlined from {' <- '.join(chain)}"
    return None, ""


def _instruction_text(text: str) -> str:
    """`vmovups zmm0,ZMMWORD PTR [r12-0x80]` with objdump's spacing folded to one space."""
    body, _, comment = text.partition("#")
    body = " ".join(body.split())
    return f"{body}  # {comment.strip()}" if comment.strip() else body


def opcode(instruction: str) -> str:
    """`lock add DWORD PTR [rax],0x1` -> `lock add`; `vmovups zmm0,...` -> `vmovups`."""
    words = instruction.split("#", 1)[0].split()
    taken = []
    for word in words:
        taken.append(word)
        if word not in _PREFIXES:
            break
    return " ".join(taken)


_REGISTER_BITS = (("zmm", 512), ("ymm", 256), ("xmm", 128))


def vector_bits(instruction: str) -> int:
    """The widest vector register (or memory operand) an instruction names: 512 for zmm,
    256 for ymm, 128 for xmm, 0 for none."""
    operands = instruction.split("#", 1)[0].lower()
    for name, bits in _REGISTER_BITS:
        if name in operands:
            return bits
    return 0


# Instruction class -> what it means; the classes of instruction_class.
INSTRUCTION_CLASSES = {
    "zmm": "512-bit vector (AVX-512)",
    "ymm": "256-bit vector (AVX/AVX2, or AVX-512VL)",
    "xmm": "128-bit vector",
    "scalar fp": "one float or double in an xmm register (vaddss, vmovss, vcvtsi2sd, ...)",
    "mask": "AVX-512 mask registers (kmovw, kortestw, ...)",
    "call": "a call (a library function: expf, an OpenMP runtime entry, ...)",
    "branch": "jumps and returns",
    "other": "integer arithmetic, addresses, moves between general registers",
}


def instruction_class(instruction: str) -> str:
    name = opcode(instruction).split()[-1] if opcode(instruction) else ""
    bits = vector_bits(instruction)
    if bits == 128 and re.search(r"(?<![p])s[sd]$", name) and not name.endswith(("ps", "pd")):
        return "scalar fp"
    if bits:
        return {512: "zmm", 256: "ymm", 128: "xmm"}[bits]
    if name.startswith("k") and re.search(r"\bk[0-7]\b", instruction.split("#", 1)[0]):
        return "mask"
    if name == "call":
        return "call"
    if name.startswith("j") or name in ("ret", "loop"):
        return "branch"
    return "other"


def instruction_mix(instructions: list[str]) -> dict[str, int]:
    """Instructions per class, largest first (ties by name)."""
    counts = Counter(instruction_class(instruction) for instruction in instructions)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def widest(instructions: list[str]) -> int:
    return max((vector_bits(instruction) for instruction in instructions), default=0)


# -- the kernel's own loops ----------------------------------------------------------------

_FOR = re.compile(r"\bfor\s*\(\s*(?:[\w:<>]+\s+)?(\w+)\s*=")
_STEP = r"\b{var}\s*\+=\s*(?:static_cast<\w+>\()?\s*(\d+)L?"
_TAIL = re.compile(r"\bif\s*\(\s*C10_UNLIKELY\s*\(")


def cpp_loops(source: str) -> list[CppLoop]:
    """The loops of an Inductor C++ kernel: each `for(` with its step, whether its body
    computes with `at::vec::Vectorized` (Inductor vectorized it, `step` lanes at a time),
    the masked tails inside it (`if(C10_UNLIKELY(x1 >= 32 && x1 < 37))`), and whether it
    accumulates a reduction (`tmp_acc`)."""
    lines = source.splitlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    loops = []
    for index, line in enumerate(lines):
        match = _FOR.search(line)
        if match is None or line.lstrip().startswith("//"):
            continue
        variable = match.group(1)
        step_match = re.search(_STEP.format(var=re.escape(variable)), line)
        step = int(step_match.group(1)) if step_match else 1
        start = offsets[index] + match.end()
        end = _body_end(source, start)
        if end is None:
            continue
        end_line = source.count("\n", 0, end) + 1
        body = source[start:end]
        vectorized = step > 1 and ("at::vec::" in body or "Vectorized<" in body)
        tails = tuple(number for number in range(index + 2, end_line + 1) if _TAIL.search(lines[number - 1]))
        loops.append(CppLoop(index + 1, end_line, variable, step, "vectorized" if vectorized else "scalar",
                             tails if vectorized else (), "tmp_acc" in body))
    return loops


def _body_end(source: str, start: int) -> int | None:
    """The offset of the `}` that closes the loop body after the loop header at `start`."""
    depth = 1  # inside the header's `(`
    index = start
    while index < len(source) and depth:
        depth += {"(": 1, ")": -1}.get(source[index], 0)
        index += 1
    brace = source.find("{", index)
    if brace < 0:
        return None
    depth = 0
    for position in range(brace, len(source)):
        char = source[position]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position
    return None


_REMARK = re.compile(r"^(.*?):(\d+):\d+: optimized: (.*)$")


def vectorizer_remarks(text: str, kernel_path: str) -> list[dict]:
    """The compiler's `-fopt-info-vec-optimized` remarks on the kernel file: {line, text}
    (`loop vectorized using 64 byte vectors`, `basic block part vectorized using 32 byte vectors`)."""
    found = []
    for line in text.splitlines():
        match = _REMARK.match(line.strip())
        if match and _same_file(match.group(1), kernel_path):
            remark = {"line": int(match.group(2)), "text": match.group(3).strip()}
            if remark not in found:
                found.append(remark)
    return found


def _short(path: str) -> str:
    """A header as people name it: `ATen/cpu/vec/vec512/vec512_float.h`, `avx512fintrin.h`."""
    parts = path.replace("\\", "/").split("/")
    if "include" in parts[:-1]:
        index = len(parts) - 1 - parts[::-1].index("include")
        return "/".join(parts[index + 1:])
    return parts[-1]


def assemble(kernel_name: str, kernel_path: str, source: str, objdump_text: str, remarks_text: str, *,
             isa: str, isa_bits: int, compiler: str, command: str) -> KernelAsm:
    """A C++ kernel's build from what the compiler and objdump gave: the stored
    disassembly, its line map and the facts."""
    found = disassembly(objdump_text, kernel_path, len(source.splitlines()))
    if not found.lines:
        raise ValueError(f"{kernel_path}: no instruction of the object file comes from a line of the kernel "
                         "(no line table: was it compiled without -g?)")
    facts = CpuFacts(
        arch="x86-64", isa=isa, isa_bits=isa_bits, vector_bits=widest(found.instructions),
        instructions=len(found.instructions), mix=instruction_mix(found.instructions), loops=cpp_loops(source),
        remarks=vectorizer_remarks(remarks_text, kernel_path), compiler=compiler, command=command,
    )
    return KernelAsm(kernel_name=kernel_name, facts=facts, stages={STAGE: found.text}, lines=found.lines,
                     tools={"compiler": compiler})
