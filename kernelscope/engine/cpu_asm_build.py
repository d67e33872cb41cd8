"""Compile a stored C++ kernel (Inductor's cpp backend, `cpp_fused_*`) the way Inductor
compiles it for this machine's CPU, and read its x86-64 instructions, line map and facts
(kernelscope.asm.x86).

Inductor builds a kernel's source (`async_compile.cpp_pybinding(argtypes, source)`) with
`CppPythonBindingsCodeCache.load_pybinding`: the source plus Python bindings, compiled by
`CppBuilder` with `CppTorchDeviceOptions(vec_isa=pick_vec_isa(), include_pytorch=False,
shared=True, device_type="cpu")` — `-O3 -march=native -fno-tree-loop-vectorize -g1` and the
`-m` flags and `CPU_CAPABILITY_*` define of the ISA Inductor picked (torch/_inductor/
cpu_vec_isa.py). The build asks Inductor for that very command (with `compile_only`: an
object file, no link), compiles the kernel's source without the bindings (they are
separate functions: the kernel's instructions are the same, tests/asm/test_x86.py checks it
against Inductor's own .so), and adds only what reads it: `-g` (full debug information:
the inline call sites; GCC generates the same code with or without it),
`-fdebug-prefix-map` (so the line table names the stored .cpp file) and
`-fopt-info-vec-optimized` (the compiler's vectorization remarks). `objdump -d -l --inlines`
then prints each instruction under its source line and inline chain.
"""
from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kernelscope.asm import x86
from kernelscope.asm.model import KernelAsm
from kernelscope.errors import UserError


class CppBuildError(UserError):
    """A C++ kernel that cannot be compiled or disassembled here."""


def build_cpp_kernel(kernel_name: str, source: str, kernel_path: str) -> KernelAsm:
    """The integration seam: one recorded C++ kernel -> its x86-64 build.

    `kernel_name`: the kernel's name (`cpp_fused_mul_silu_0`); `source`: the kernel's C++
    text as Inductor generated it (the string it hands `cpp_pybinding`); `kernel_path`: the
    store's kernel file holding that text (absolute), which the line map names."""
    started = time.perf_counter()
    isa, isa_bits = _picked_isa()
    with tempfile.TemporaryDirectory(prefix="kernelscope-x86-") as directory:
        work = Path(directory)
        source_path = work / Path(kernel_path).name
        source_path.write_text(source, encoding="utf-8")
        object_path = work / "kernel.o"
        remarks_path = work / "remarks.txt"
        command = inductor_compile_command(str(source_path), str(object_path))
        added = ["-g", f"-fdebug-prefix-map={work}={Path(kernel_path).parent}",
                 f"-fopt-info-vec-optimized={remarks_path}"]
        _run(command + added, f"{kernel_path}: compiling the kernel with Inductor's command failed")
        objdump = _run([_objdump(), "-d", "-l", "--inlines", "--no-show-raw-insn", "-M", "intel", "-C",
                        str(object_path)], f"{kernel_path}: objdump failed")
        remarks = remarks_path.read_text(encoding="utf-8") if remarks_path.exists() else ""
        remarks = remarks.replace(str(source_path), kernel_path)
        shown = " ".join(shlex.quote(part) for part in command).replace(str(work), "<tmp>")
        try:
            built = x86.assemble(kernel_name, kernel_path, source, objdump, remarks, isa=isa, isa_bits=isa_bits,
                                 compiler=compiler_version(command[0]), command=shown)
        except ValueError as error:
            raise CppBuildError(str(error)) from error
    built.tools["objdump"] = _objdump_version()
    built.build_seconds = time.perf_counter() - started
    return built


def inductor_compile_command(source_path: str, object_path: str) -> list[str]:
    """The command Inductor compiles a `cpp_pybinding` kernel with on this machine, as an
    object file (`-c -o object_path`)."""
    from torch._inductor import config as inductor_config
    from torch._inductor.codecache import CppPythonBindingsCodeCache
    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    options = CppTorchDeviceOptions(
        compile_only=True, min_optimize=False, **CppPythonBindingsCodeCache.cpp_compile_command_flags,
        device_type="cpu", extra_flags=(), use_relative_path=inductor_config.is_fbcode(), vec_isa=pick_vec_isa())
    object_file = Path(object_path)
    builder = CppBuilder(name=object_file.stem, sources=source_path, BuildOption=options,
                         output_dir=str(object_file.parent))
    command = shlex.split(builder.get_command_line())
    built = builder.get_target_file_path()
    return [object_path if part == built else part for part in command]


def _picked_isa() -> tuple[str, int]:
    """The vector ISA Inductor compiles C++ kernels for here (`pick_vec_isa`) and its width."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    isa = pick_vec_isa()
    if not isa:
        return "none (scalar)", 0
    return str(isa), int(isa.bit_width())


def _run(command: list[str], failure: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except OSError as error:
        raise CppBuildError(f"{failure}: cannot run {command[0]}: {error.strerror}") from error
    except subprocess.TimeoutExpired as error:
        raise CppBuildError(f"{failure}: still running after 600 s") from error
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
        raise CppBuildError(f"{failure} (exit {done.returncode}): {' | '.join(errors[:3])[:500]}")
    return done.stdout


def _objdump() -> str:
    found = shutil.which(os.environ.get("KERNELSCOPE_OBJDUMP", "objdump"))
    if found is None:
        raise CppBuildError("objdump is not installed: install binutils (apt-get install binutils), "
                            "or point KERNELSCOPE_OBJDUMP at one")
    return found


@functools.cache
def compiler_version(compiler: str) -> str:
    """`g++ (Debian 12.2.0-14+deb12u1) 12.2.0`: the first line of `compiler --version`."""
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return f"{compiler} (version unknown)"
    first = done.stdout.strip().splitlines()
    return first[0] if first else f"{compiler} (version unknown)"


@functools.cache
def _objdump_version() -> str:
    return compiler_version(_objdump())
