"""Read the structure of an Inductor Python wrapper: kernel definitions, the call
body, launches and extern calls, and what each line does. Text only, no torch.

Two kinds of kernel block: a Triton kernel (`name = async_compile.triton('name', '''` ... `''', device_str='cuda')`,
launched as `name.run(...)`) and a C++ kernel of Inductor's CPU backend
(`cpp_fused_x_0 = async_compile.cpp_pybinding([...], r'''` ... `''')`, called as `cpp_fused_x_0(buf0, ...)`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_KERNEL_START = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''\s*$")
_KERNEL_END = re.compile(r"^''', device_str='\w+'\)\s*$")
_CPP_KERNEL_START = re.compile(r"^(cpp_\w+) = async_compile\.cpp_pybinding\(.*, r'''\s*$")
_CPP_KERNEL_END = re.compile(r"^'''\)\s*$")
_CPP_LAUNCH = re.compile(r"^\s*(cpp_\w+)\(")
_CALL_DEF = re.compile(r"^(\s*)def call\((self, )?args\):\s*$")
_LAUNCH = re.compile(r"\b(\w+)\.run\(")
_EXTERN = re.compile(r"\b(extern_kernels\.\w+|aten\.\w+(?:\.\w+)?|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")
_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+):(\d+)")
_ALLOC = re.compile(r"^\s*(\w+) = empty_strided_\w+\(")
_REUSE = re.compile(r"^\s*(\w+) = (\w+); del \2\s*# reuse")


@dataclass
class KernelBlock:
    name: str
    first_line: int  # wrapper line of the kernel source's first line
    source: str
    launched_as: str = ""  # the variable its launches name: the name itself for Inductor's own
    # kernels, `add_kernel_0` for a program's own Triton kernel `add_kernel`
    language: str = "triton"  # "cpp": a C++ kernel of Inductor's CPU backend

    @property
    def user_defined(self) -> bool:
        """A program's own Triton kernel (Inductor names its variable apart from its name)."""
        return bool(self.launched_as) and self.launched_as != self.name


@dataclass
class WrapperLayout:
    kernel_blocks: list[KernelBlock]
    call_start: int  # line of `def call(...)`, 0 if absent
    call_end: int  # line of call's `return`, 0 if absent
    handles: dict[int, tuple[str, int]]  # line of a launch/extern call -> (name, debug handle)


def read_layout(text: str, function: str = "call") -> WrapperLayout:
    """`function`: the name of the call body's def (`call`; a subgraph's own, e.g. `true_graph_0`)."""
    call_def = (_CALL_DEF if function == "call"
                else re.compile(rf"^(\s*)def {re.escape(function)}\((self, )?args\):\s*$"))
    lines = text.splitlines()
    blocks: list[KernelBlock] = []
    handles: dict[int, tuple[str, int]] = {}
    call_start = call_end = 0
    call_indent = 0  # the indentation of `def call(...)`, set with call_start
    pending_handle: tuple[str, int] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        start = _KERNEL_START.match(line)
        cpp_start = None if start else _CPP_KERNEL_START.match(line)
        if start or cpp_start:
            end_pattern = _KERNEL_END if start else _CPP_KERNEL_END
            end = index + 1
            while end < len(lines) and not end_pattern.match(lines[end]):
                end += 1
            source = "\n".join(lines[index + 1 : end]) + "\n"
            if start:
                blocks.append(KernelBlock(start.group(2), index + 2, source, start.group(1)))
            elif cpp_start:
                blocks.append(KernelBlock(cpp_start.group(1), index + 2, source, cpp_start.group(1), "cpp"))
            index = end + 1
            continue
        call = call_def.match(line)
        if call and not call_start:
            call_start, call_indent = index + 1, len(call.group(1))
        elif call_start and not call_end:
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            if stripped.startswith("return") and indent == call_indent + 4:
                call_end = index + 1
            handle = _HANDLE.search(line)
            if handle:
                pending_handle = (handle.group(1), int(handle.group(2)))
            elif pending_handle and (kernel_launch(line) or _EXTERN.search(line)):
                handles[index + 1] = pending_handle
                pending_handle = None
        index += 1
    return WrapperLayout(blocks, call_start, call_end, handles)


_COMBO_BLOCK = re.compile(r"^(?:el)?if pid < num_xblocks_(\d+):$")


def combo_block(stripped: str, current: int | None) -> int | None:
    """The sub-kernel block of a foreach/combo kernel a line is in (`if pid < num_xblocks_1:`
    opens block 1; the final `else:` closes the last), given the block of the line before."""
    opened = _COMBO_BLOCK.match(stripped)
    if opened:
        return int(opened.group(1))
    return None if stripped == "else:" else current


def line_reason(line: str) -> str:
    """What a wrapper line does, in words a user reads in a hover."""
    stripped = line.strip()
    if stripped.startswith("# Topologically Sorted Source Nodes"):
        return "comment: source nodes"
    if stripped.startswith("#"):
        return "comment"
    launched = kernel_launch(stripped)
    if launched:
        return f"launches kernel {launched}"
    extern = _EXTERN.search(stripped)
    if extern and not stripped.startswith(("assert", "del ")):
        return f"calls extern kernel {extern.group(1)}"
    if _ALLOC.match(line):
        return "allocates output of"
    if _REUSE.match(line):
        return "reuses buffer for"
    if stripped.startswith("del "):
        return "frees buffer after"
    if stripped.startswith("assert_size_stride") or stripped.startswith("assert_alignment"):
        return "checks input layout for"
    if "get_raw_stream" in stripped:
        return "selects stream for"
    return "wrapper code for"


def extern_call(line: str) -> str | None:
    stripped = line.strip()
    if stripped.startswith(("#", "assert", "del ")):
        return None
    match = _EXTERN.search(stripped)
    return match.group(1) if match else None


_ANY_KERNEL_START = re.compile(r"^(\w+) = async_compile\.(\w+)\(")
RECORDED_BACKENDS = ("triton", "cpp_pybinding")  # the kernel blocks read_layout reads


def unrecorded_kernels(text: str) -> list[tuple[str, str]]:
    """(kernel, how Inductor compiles it: `halide`, `cuda`, ...) for each kernel the wrapper
    defines with a backend kernelscope does not read line by line (not Triton, not C++)."""
    found = []
    for line in text.splitlines():
        match = _ANY_KERNEL_START.match(line)
        if match and match.group(2) not in RECORDED_BACKENDS and match.group(2) != "wait":
            found.append((match.group(1), match.group(2)))
    return found


def provenance_handle(line: str) -> str | None:
    """The kernel a `# [Provenance debug handles] name:N` comment is about, else None."""
    match = _HANDLE.search(line)
    return match.group(1) if match else None


def kernel_launch(line: str) -> str | None:
    """The kernel variable a wrapper line launches: `name.run(...)` (Triton) or
    `cpp_fused_x_0(...)` (a C++ kernel, called directly), else None."""
    match = _LAUNCH.search(line) or _CPP_LAUNCH.match(line)
    return match.group(1) if match else None


def kernel_body_start(source: str) -> int:
    """1-based line of the first line after the kernel's `def` (a C++ kernel: after its
    `extern "C"` signature, whose arguments may span lines), 0 if none."""
    lines = source.splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("def "):
            return number + 1
        if line.startswith('extern "C"'):
            for end, rest in enumerate(lines[number - 1:], number):
                if rest.rstrip().endswith(")"):
                    return end + 1
            return 0
    return 0


def assignment_target(stripped_line: str) -> str | None:
    """`tmp5` for `tmp5 = libdevice.erf(tmp4)` (or `tmp5: "f32" = ...`), else None.

    The kernel-line probe keys what it saw by this target and links.py looks lines
    up the same way, so both use this one function."""
    if " = " not in stripped_line:
        return None
    target = stripped_line.split(" = ", 1)[0].split(":", 1)[0].strip()
    return target if target.isidentifier() else None


def region_of_each_line(regions: list[tuple[int, list[str], list[str]]], call_end: int) -> dict[int, list[str]]:
    """Wrapper line -> the nodes its scheduler node computes, from the regions the scheduler
    opened (first line, origins, computes), in order; lines of no region are absent."""
    nodes_of_line: dict[int, list[str]] = {}
    for index, (start, _origins, computes) in enumerate(regions):
        end = regions[index + 1][0] if index + 1 < len(regions) else call_end
        for number in range(start, end):
            nodes_of_line[number] = computes
    return nodes_of_line
