"""Read the structure of an Inductor C++ wrapper: AOTInductor's model (`run_impl`) or
`cpp_wrapper` mode's entry (`inductor_entry_impl`). Text only, no torch.

The counterpart of wrapper_code.py (the Python wrapper): where the call body is, which
lines launch a kernel or call an extern kernel (`aoti_torch_cpu_mm_out`), the debug-handle
comments Inductor writes before them, the kernel definitions a wrapper holds, and what
each line does in words. `cpp_part` takes the C++ out of `cpp_wrapper` mode's Python
module, which holds it as a string (`cpp_wrapper_src = (r\"\"\"...\"\"\")`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# AOTInductor: `void AOTInductorModel::run_impl(` ... `} // AOTInductorModel::run_impl`;
# cpp_wrapper mode: `void inductor_entry_impl(` ... `} // inductor_entry_impl`.
_BODY_START = re.compile(r"^void (AOTInductorModel::run_impl|inductor_entry_impl)\(\s*$")
_HANDLE = re.compile(r"//\s*\[Provenance debug handles\]\s*(\S+):(\d+)")
_EXTERN = re.compile(r"\b(aoti_torch_(?:cpu|cuda|xpu|mps)_\w+|aoti_torch_proxy_executor_call_function)\(")
_ALLOC = re.compile(r"aoti_torch_empty_strided\(|^\s*AtenTensorHandle \w+_handle;"
                    r"|^\s*RAIIAtenTensorHandle \w+\(\w+_handle\);")
_REUSE = re.compile(r"^\s*auto (\w+) = std::move\((\w+)\);\s*// reuse")
_FREE = re.compile(r"^\s*\w+\.reset\(\);\s*$")
_SIZES = re.compile(r"^\s*static constexpr int64_t int_array_\d+\[\] = ")
# A kernel's definition or declaration: `extern "C"  void  cpp_fused_mul_silu_0(float* in_out_ptr0,`
_KERNEL_DECL = re.compile(r'^extern "C"\s+void\s+(\w+)\(')
_CPP_SOURCE_START = re.compile(r'^cpp_wrapper_src = \($')
# A CUDA C++ wrapper keeps each Triton kernel's module as a string it compiles lazily:
# `async_compile.triton('triton_poi_fused_mul_silu_0', '''` ... `''', device_str='cuda')`;
# AOTInductor's keeps it, indented, in a comment inside the kernel's launch function.
_TRITON_START = re.compile(r"^(\s*)async_compile\.triton\('(\w+)', '''\s*$")
_TRITON_END = re.compile(r"^\s*''', device_str='\w+'\)\s*$")


@dataclass
class KernelDefinition:
    name: str
    first_line: int  # 1-based, in the wrapper
    last_line: int
    source: str


@dataclass
class CppWrapperLayout:
    body_start: int  # the line of `void ...run_impl(` (0 if absent)
    body_end: int  # the line of its closing `} // ...`
    handles: dict[int, tuple[str, int]]  # line of a launch/extern call -> (name, debug handle)
    launches: dict[int, str]  # line -> the kernel it launches
    definitions: list[KernelDefinition] = field(default_factory=list)  # kernels defined in the wrapper
    declarations: dict[int, str] = field(default_factory=dict)  # line -> the kernel it declares
    triton_sources: list[KernelDefinition] = field(default_factory=list)  # Triton modules the wrapper holds


def cpp_part(wrapper_text: str) -> tuple[str, int]:
    """The C++ a wrapper holds and the number of lines before it: `cpp_wrapper` mode's Python
    module holds its C++ in `cpp_wrapper_src` (from the line after `r\"\"\"` to the closing
    `\"\"\"`); AOTInductor's wrapper is C++ already (offset 0)."""
    lines = wrapper_text.splitlines()
    for index, line in enumerate(lines):
        if _CPP_SOURCE_START.match(line) and index + 1 < len(lines) and lines[index + 1] == 'r"""':
            end = next((j for j in range(index + 2, len(lines)) if lines[j] == '"""'), len(lines))
            return "\n".join(lines[index + 2:end]) + "\n", index + 2
    return wrapper_text, 0


def read_layout(text: str, kernel_names: set[str]) -> CppWrapperLayout:
    """`kernel_names`: the kernels Inductor generated for this graph (their launches are
    `name(...)` lines; a GPU wrapper's are `call_name(...)`)."""
    lines = text.splitlines()
    body_start = body_end = 0
    for number, line in enumerate(lines, 1):
        if not body_start and _BODY_START.match(line):
            body_start = number
        elif body_start and line.startswith("} // "):
            body_end = number
            break
    handles: dict[int, tuple[str, int]] = {}
    launches: dict[int, str] = {}
    pending: tuple[str, int] | None = None
    for number in range(body_start + 1, body_end):
        line = lines[number - 1]
        handle = _HANDLE.search(line)
        if handle:
            pending = (handle.group(1), int(handle.group(2)))
            continue
        launched = kernel_launch(line, kernel_names)
        if launched:
            launches[number] = launched
        if pending and (launched or extern_call(line)):
            handles[number] = pending
            pending = None
    triton_sources = _triton_sources(lines)
    inside = {number for block in triton_sources for number in range(block.first_line - 1, block.last_line + 2)}
    definitions, declarations = _kernel_definitions(lines, kernel_names, body_start, body_end)
    declarations = {number: name for number, name in declarations.items() if number not in inside}
    return CppWrapperLayout(body_start, body_end, handles, launches, definitions, declarations, triton_sources)


def _triton_sources(lines: list[str]) -> list[KernelDefinition]:
    """The Triton kernels' modules a CUDA C++ wrapper holds as strings: first_line..last_line
    are the module's lines (between the `async_compile.triton(...` line and its end); the
    source is the module as Inductor wrote it (an AOTInductor comment's indent taken off)."""
    found: list[KernelDefinition] = []
    for index, line in enumerate(lines):
        start = _TRITON_START.match(line)
        if start is None:
            continue
        end = next((each for each in range(index + 1, len(lines)) if _TRITON_END.match(lines[each])), None)
        if end is not None:
            indent = len(start.group(1))
            module = [each[indent:] if each[:indent].isspace() else each.lstrip() for each in lines[index + 1:end]]
            found.append(KernelDefinition(start.group(2), index + 2, end, "\n".join(module) + "\n"))
    return found


def _kernel_definitions(lines: list[str], names: set[str], body_start: int,
                        body_end: int) -> tuple[list[KernelDefinition], dict[int, str]]:
    """Kernels defined in the wrapper (`cpp_wrapper` mode puts their code after the entry) and
    lines that only declare one (AOTInductor compiles its kernels apart: `extern "C" void
    name(...);`, its kernel table's `void* name{nullptr};`), outside the call body."""
    definitions: list[KernelDefinition] = []
    declarations: dict[int, str] = {}
    index = 0
    while index < len(lines):
        number = index + 1
        if body_start <= number <= body_end:
            index += 1
            continue
        match = _KERNEL_DECL.match(lines[index])
        if match is None or match.group(1) not in names:
            named = next((name for name in names if re.search(rf"\b{re.escape(name)}\b", lines[index])), None)
            if named is not None:
                declarations[number] = named
            index += 1
            continue
        signature_end = index
        while signature_end < len(lines) - 1 and not lines[signature_end].rstrip().endswith((")", ");")):
            signature_end += 1
        if lines[signature_end].rstrip().endswith(";"):  # a declaration
            declarations.update({each + 1: match.group(1) for each in range(index, signature_end + 1)})
            index = signature_end + 1
            continue
        close = next((each for each in range(signature_end + 1, len(lines)) if lines[each] == "}"), len(lines) - 1)
        definitions.append(KernelDefinition(match.group(1), number, close + 1,
                                            "\n".join(lines[index:close + 1]) + "\n"))
        index = close + 1
    return definitions, declarations


def declared_kernels(text: str) -> set[str]:
    """The names of the kernels a C++ text declares or defines (`extern "C" void name(`)."""
    return {match.group(1) for match in map(_KERNEL_DECL.match, text.splitlines()) if match}


def kernel_launch(line: str, kernel_names: set[str]) -> str | None:
    """The kernel a body line launches: `cpp_fused_mul_silu_0((float*)...)`, or a GPU
    wrapper's `call_triton_poi_fused_0(...)`."""
    stripped = line.strip()
    if stripped.startswith("//"):
        return None
    for match in re.finditer(r"\b(?:call_)?(\w+)\(", stripped):
        if match.group(1) in kernel_names:
            return match.group(1)
    return None


def is_extern(name: str) -> bool:
    """Whether a debug handle's name is an extern kernel's (`aoti_torch_cpu_mm_out`), not a generated kernel's."""
    return bool(_EXTERN.fullmatch(f"{name}("))


def extern_call(line: str) -> str | None:
    stripped = line.strip()
    if stripped.startswith("//"):
        return None
    match = _EXTERN.search(stripped)
    return match.group(1) if match else None


def line_reason(line: str, kernel_names: set[str]) -> str:
    """What a C++ wrapper line does, in words a user reads in a hover."""
    stripped = line.strip()
    if stripped.startswith("// Topologically Sorted Source Nodes"):
        return "comment: source nodes"
    if stripped.startswith("//"):
        return "comment"
    launched = kernel_launch(line, kernel_names)
    if launched:
        return f"launches kernel {launched}"
    extern = extern_call(line)
    if extern:
        return f"calls extern kernel {extern}"
    if _ALLOC.search(line):
        return "allocates output of"
    if _REUSE.match(line):
        return "reuses buffer for"
    if _FREE.match(line):
        return "frees buffer after"
    if _SIZES.match(line):
        return "sizes and strides for"
    if "assert_size_stride" in stripped or "assert_alignment" in stripped:
        return "checks input layout for"
    return "wrapper code for"


def is_free(line: str) -> bool:
    return bool(_FREE.match(line))


def handle_comment(line: str) -> bool:
    """A comment Inductor writes before a launch or extern call (source nodes, debug handle)."""
    stripped = line.strip()
    return stripped.startswith(("// Topologically Sorted Source Nodes", "// [Provenance debug handles]"))
