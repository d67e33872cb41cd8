"""Below a C++ kernel: real kernels Inductor's cpp backend generates for small models on
this CPU, compiled with Inductor's own command (kernelscope/engine/cpu_asm_build.py) and
read back as x86-64 with line maps, vector widths and loops (kernelscope/asm/x86.py); then
stored and answered through the CLI."""
from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest
from synthetic_runs import (
    GELU_LINE,
    MLP_PATH,
    make_mlp_run,
    origins,
    workspace,  # noqa: F401 - fixture
)

pytestmark = pytest.mark.slow  # torch.compile of two small functions, then g++ per kernel

# Inductor hands each C++ kernel to `async_compile.cpp_pybinding(argtypes, r'''<source>''')`.
_CPP_KERNEL = re.compile(r"(cpp_fused_\w+) = async_compile\.cpp_pybinding\(\[[^\]]*\], r'''(.*?)'''\)", re.DOTALL)


@pytest.fixture(scope="module")
def inductor_cpp(tmp_path_factory):
    """{"silu": (name, source, Inductor's .so), "gelu": (...)}: the C++ kernels Inductor wrote
    for two small functions on CPU tensors (its default cpp backend), from the output code,
    with the shared library Inductor built from each."""
    import torch
    from torch._inductor import config as inductor_config
    from torch._inductor.utils import run_and_get_code

    def silu_mul_sum(x, y):
        a = torch.nn.functional.silu(x) * y
        return a, a.sum(dim=-1)

    def gelu(h):
        return torch.nn.functional.gelu(h)

    cache = tmp_path_factory.mktemp("inductor-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    found = {}
    try:
        with inductor_config.patch(fx_graph_cache=False):
            for key, function, inputs in (("silu", silu_mul_sum, (torch.randn(8, 37), torch.randn(8, 37))),
                                          ("gelu", gelu, (torch.randn(8, 64),))):
                torch._dynamo.reset()
                _, codes = run_and_get_code(torch.compile(function), *inputs)
                [(name, source)] = _CPP_KERNEL.findall(codes[0])
                [library] = [path.with_name(path.name.replace(".main.cpp", ".main.so"))
                             for path in cache.rglob("*.main.cpp") if path.read_text().startswith(source)]
                found[key] = (name, source, library)
    finally:
        patch.undo()
    return found


@pytest.fixture(scope="module")
def silu_build(inductor_cpp, tmp_path_factory):
    from kernelscope.engine.cpu_asm_build import build_cpp_kernel

    name, source, library = inductor_cpp["silu"]
    path = tmp_path_factory.mktemp("store") / f"{name}.cpp"
    path.write_text(source)
    return name, source, str(path), library, build_cpp_kernel(name, source, str(path))


def _isa_register(bits: int) -> str:
    return {512: "zmm", 256: "ymm"}[bits]


def _kernel_mnemonics(objdump_text: str, separator: str) -> list[str]:
    """The mnemonics of the `kernel` function of a disassembly, without the padding `nop`s a
    linker leaves after a function."""
    from kernelscope.asm import x86

    body = objdump_text.split("<kernel>:\n", 1)[1].split("\n\n", 1)[0]
    texts = [" ".join(match.group(1).split())
             for match in re.finditer(rf"^\s+[0-9a-f]+:{separator}(.*)$", body, re.MULTILINE)]
    while texts and (" nop " in f" {texts[-1]} " or texts[-1] == "xchg ax,ax"):
        texts.pop()
    return [x86.opcode(text).split()[-1] for text in texts]


def test_a_vectorized_body_line_maps_to_the_isas_vector_registers(silu_build):
    """The line of the vectorized loop body that multiplies (`tmp6 * tmp7`) maps to
    instructions on the registers of the ISA Inductor picked (zmm for avx512, ymm for avx2),
    with `via` naming the ATen header its operator came from."""
    from kernelscope.asm import x86

    name, source, path, _, built = silu_build
    facts = built.facts
    assert facts.isa_bits in (256, 512) and facts.vector_bits == facts.isa_bits
    lines = source.splitlines()
    multiply = next(number for number, text in enumerate(lines, 1) if "auto tmp8 = tmp6 * tmp7;" in text)
    loop = next(loop for loop in facts.loops if loop.line < multiply <= loop.end_line and loop.kind == "vectorized")
    assert loop.step == facts.isa_bits // 32  # Inductor's Vectorized<float> lanes
    instructions = [line for line in built.lines if line.kernel_line == multiply]
    register = _isa_register(facts.isa_bits)
    multiplies = [line for line in instructions if line.opcode == "vmulps"]
    assert multiplies and all(register in line.text for line in multiplies), instructions
    assert all(x86.vector_bits(line.text) == facts.isa_bits for line in multiplies)
    assert any("ATen/cpu/vec/" in line.via for line in multiplies)
    stored = built.stages["x86"].splitlines()
    assert all(stored[line.line - 1].strip().endswith(line.text) for line in built.lines)
    assert max(line.kernel_line for line in built.lines) <= len(lines)  # Python bindings left out
    assert "<kernel>:" in built.stages["x86"] and "kernel_py" not in built.stages["x86"]


def test_a_reductions_masked_tail_maps_to_masked_vector_instructions(silu_build):
    """The sum over 37 columns is a vectorized reduction loop whose last 37 % lanes columns
    run in a masked tail (`if(C10_UNLIKELY(x1 >= 32 && x1 < 37))` on avx512): the tail's
    lines map to vector instructions under an AVX-512 mask (`{k1}`), or, on avx2, masked loads."""
    from kernelscope.asm import text as asm_text

    _, source, _, _, built = silu_build
    facts = built.facts
    [reduction] = [loop for loop in facts.loops if loop.reduction and loop.kind == "vectorized"]
    assert reduction.tail_lines and 37 % reduction.step != 0
    tail = reduction.tail_lines[0]
    tail_lines = [line for line in built.lines if tail < line.kernel_line <= reduction.end_line]
    register = _isa_register(facts.isa_bits)
    vector = [line for line in tail_lines if register in line.text]
    assert vector, tail_lines
    if facts.isa_bits == 512:
        assert any(re.search(r"\{k[1-7]\}", line.text) for line in vector), vector
    else:
        assert any("vmaskmov" in line.opcode or "blend" in line.opcode for line in tail_lines), tail_lines
    where = asm_text.loops_at(facts, tail + 2)
    assert f"vectorized loop {reduction.variable} (line {reduction.line}, {reduction.step} lanes, a reduction)" in where
    assert f"masked tail (line {tail})" in where


def test_the_build_is_inductors_own_code_and_facts_add_up(silu_build):
    """Inductor's command, not a re-derivation: the `kernel` function compiled here has the
    same instructions as the one in the .so Inductor built and loaded; the facts count the
    kept instructions and name the ISA Inductor picked."""
    from kernelscope.engine.cpu_asm_build import _picked_isa

    _, _, _, library, built = silu_build
    inductors = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "intel", str(library)],
                               capture_output=True, text=True, check=True).stdout
    ours = _kernel_mnemonics(built.stages["x86"], "  ")
    assert len(ours) > 100 and ours == _kernel_mnemonics(inductors, "\t")
    facts = built.facts
    assert facts.isa == _picked_isa()[0] and "-march=native" in facts.command and " -O3 " in facts.command
    assert sum(facts.mix.values()) == facts.instructions
    assert facts.mix[_isa_register(facts.isa_bits)] > 0 and facts.compiler.startswith(("g++", "c++", "clang"))
    assert all(loop.kind in ("vectorized", "scalar") for loop in facts.loops)


@pytest.fixture
def cpp_store(workspace, inductor_cpp):  # noqa: F811 - the fixture
    """The MLP run with its forward GELU kernel as Inductor's real C++ kernel for the same
    GELU (kind `cpp`: stored as a .cpp file), its erf line linked to the erf node; built."""
    from kernelscope.engine.asm_build import build_run_asm
    from kernelscope.store import StoreBackend

    name, source, _ = inductor_cpp["gelu"]
    erf = next(number for number, text in enumerate(source.splitlines(), 1) if ".erf()" in text)
    run = make_mlp_run(workspace)
    forward = run.graphs[0]
    forward.kernels = [dataclasses.replace(
        kernel, name=name, kind="cpp", source=source, lines=origins(source, [(erf, ["erf"], "computes")]))
        if kernel.kind == "triton" else kernel for kernel in forward.kernels]
    store = StoreBackend(workspace / ".kernelscope")
    run_id = store.write_run(run)
    assert store.asm.status(run_id).buildable == 2  # the C++ kernel, and the backward's Triton one
    [triton] = [kernel for kernel in store.asm.pending(run_id) if kernel.file.endswith(".py")]
    summary = build_run_asm(store, run_id, [kernel.kernel_id for kernel in store.asm.pending(run_id)
                                            if kernel.file.endswith(".cpp")])
    assert (summary.built, summary.failed) == (1, [])
    # the backward's synthetic Triton kernel is not this test's: stored as not built, so that
    # `query --asm` has nothing left to build (no engine worker starts)
    assert store.asm.write(triton, None, "left unbuilt by the test")
    yield store, run_id, name, erf
    store.close()


def test_cli_query_goes_down_to_x86_and_back_up(cpp_store, run_cli, workspace):  # noqa: F811
    """`query MODEL:LINE --asm` reaches the C++ kernel's erf line and its x86-64 instructions
    with the vector width; a line of the stored .x86 file goes back up to the model line."""
    store, run_id, name, erf = cpp_store
    [info] = [info for info in store.asm.run_infos(run_id).values() if info.name == name]
    assert info.built and info.facts is None and info.cpu.isa_bits in (256, 512)
    assert info.files["x86"].endswith(f"/{name}/{name}.x86")
    root = str(workspace / ".kernelscope")
    down = run_cli(["query", f"{MLP_PATH}:{GELU_LINE}", "--asm", "--store", root], cwd=workspace)
    assert down.returncode == 0, down.stderr
    register = _isa_register(info.cpu.isa_bits)
    assert f"below the kernel: 1 C++ kernel · x86-64 {info.cpu.isa}" in down.stdout, down.stdout
    assert f"kernel line {erf}" in down.stdout and "vectorized loop x0" in down.stdout
    x86_line = re.search(rf"x86 :(\d+)  \S+ .*{register}", down.stdout)
    assert x86_line, down.stdout[-3000:]
    up = run_cli(["query", f"{workspace / '.kernelscope' / info.files['x86']}:{x86_line.group(1)}",
                  "--store", root], cwd=workspace)
    assert up.returncode == 0, up.stderr
    assert f"(X86 of kernel {name}, run {run_id})" in up.stdout
    assert f"from kernel line {info.kernel_file}:{erf}" in up.stdout and f"mlp.py:{GELU_LINE}" in up.stdout
    shown = run_cli(["show", str(run_id), "--store", root], cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    row = next(text for text in shown.stdout.splitlines() if name in text and "x86-64" in text)
    assert f"  {info.cpu.instructions}  " in row and register in row


def test_an_unknown_kernel_file_fails_with_the_file_named(tmp_path):
    """A .cpp file that is no Inductor kernel fails to compile with its path and the compiler's error."""
    from kernelscope.engine.cpu_asm_build import CppBuildError, build_cpp_kernel

    path = tmp_path / "broken.cpp"
    with pytest.raises(CppBuildError, match=rf"{re.escape(str(path))}: compiling the kernel .* failed .*error"):
        build_cpp_kernel("broken", "extern \"C\" void kernel() { undeclared(); }\n", str(path))


def test_path_of_a_cpp_kernel_is_a_cpp_file():
    from kernelscope.store import paths

    assert paths.kernel_file(3, "0_0_0-inference", "cpp_fused_mul_0", "cpp").endswith("/kernels/cpp_fused_mul_0.cpp")
    assert Path(paths.kernel_file(3, "g", "triton_poi_0")).suffix == ".py"


def test_dump_carries_the_cpu_build_and_validates(cpp_store):
    """The dump (schema 8.0) gives the C++ kernel's `asm`: ISA, vector width, loops and its
    x86 file, portable (no run directory in its hash), and validates against the schema."""
    from kernelscope.store import validate_dump

    store, run_id, name, _ = cpp_store
    dumped = store.run(run_id).dump()
    validate_dump(dumped)
    [asm] = [kernel["asm"] for graph in dumped["run"]["graphs"] for kernel in graph["kernels"]
             if kernel["name"] == name]
    assert asm["arch"] == "x86-64" and asm["vector_bits"] == asm["isa_bits"]
    assert any(loop["kind"] == "vectorized" for loop in asm["loops"])
    assert asm["files"]["x86"]["path"].endswith(f"{name}.x86") and "command" not in asm


def test_language_server_hover_text_of_a_cpp_line_names_its_x86(cpp_store):
    """The language server's hover part for a C++ kernel line (below.kernel_line_text): the
    kernel's ISA and vector width, the vectorized loop the line is in, and a link to its
    x86-64 lines; an .x86 line's lens names the kernel's facts."""
    from kernelscope.lsp import below

    store, run_id, name, erf = cpp_store
    view = store.run(run_id)
    [info] = [info for info in view.asm_builds().values() if info.name == name]
    text = below.kernel_line_text(view, info.kernel_file, erf, lambda path, line: f"{path}#L{line}")
    register = _isa_register(info.cpu.isa_bits)
    assert text.startswith(f"**below the kernel**: x86-64 · ISA {info.cpu.isa} ({info.cpu.isa_bits}-bit) · "
                           f"widest vectors {register}"), text
    assert "- vectorized loop x0 (line " in text
    assert re.search(rf"- \[x86-64 :[^\]]+\]\({re.escape(info.files['x86'])}#L\d+\) \d+ instructions?: "
                     rf".*{register} \d+", text), text
    assert below.stage_file_lens(view, view.locate(info.files["x86"])).startswith(f"x86-64 of {name} · x86-64 · ISA")
