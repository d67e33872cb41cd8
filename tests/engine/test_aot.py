"""`--aot` (AOTInductor) and `--cpp-wrapper`: the C++ wrapper kept as wrapper.cpp and linked
line by line to post-grad nodes (engine/cpp_wrapper_links.py), the .pt2 package kept with the
run, and the errors an AOT build gives (engine/aot_build.py). Each build is recorded once
per module and written into a store, read back through the read model as front ends do."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from conftest import DATA, EXAMPLES, REPO, example_line

from kernelscope.errors import TargetError

pytestmark = pytest.mark.slow

SWIGLU = f"{EXAMPLES / 'swiglu_mlp'}.py:make"


def _recorded(tmp_path_factory, name: str, **options):
    from kernelscope.api.recording import write_run
    from kernelscope.engine.recorder import RecordOptions, record_factory

    record = record_factory(SWIGLU, RecordOptions(workspace=REPO, **options))
    store = tmp_path_factory.mktemp(name) / ".kernelscope"
    return record, write_run(record, store)


@pytest.fixture(scope="module")
def aot_cpu(tmp_path_factory):
    return _recorded(tmp_path_factory, "aot-cpu", device="cpu", aot=True)


@pytest.fixture(scope="module")
def aot_virtual_cuda(tmp_path_factory):
    return _recorded(tmp_path_factory, "aot-vcuda", device="virtual-cuda", aot=True)


@pytest.fixture(scope="module")
def cpp_wrapper_cpu(tmp_path_factory):
    return _recorded(tmp_path_factory, "cpp-wrapper-cpu", device="cpu", cpp_wrapper=True)


@pytest.fixture(scope="module")
def cpp_wrapper_virtual_cuda(tmp_path_factory):
    return _recorded(tmp_path_factory, "cpp-wrapper-vcuda", device="virtual-cuda", cpp_wrapper=True)


def _coverage(record) -> dict:
    from kernelscope.store.writing.coverage import compute_coverage

    return compute_coverage(record)


def _launch_lines(run, needle: str) -> list:
    """The wrapper lines a SwiGLU model line reaches that launch a kernel: as wrapper lines of
    its nodes, or as the launches of a kernel it reaches."""
    answer = run.view.query(EXAMPLES / "swiglu_mlp.py", example_line("swiglu_mlp", needle))
    lines = [line for chain in answer.graphs for line in chain.wrapper_lines]
    lines += [call for chain in answer.graphs for kernel in chain.kernels if kernel.kind != "extern"
              for call in kernel.calls]
    return [line for line in lines if line.text.lstrip().startswith(("cpp_fused", "call_triton"))]


def _check_cpp_wrapper(record, run, launched: str) -> None:
    (graph,) = record.graphs
    assert graph.wrapper_language == "cpp"
    assert _coverage(record)["wrapper_lines"]["share"] >= 0.95
    assert graph.wrapper_attributable >= 20  # the call body's lines are counted, not skipped
    (wrapper_file,) = [graph_info.files["wrapper"] for graph_info in run.view.details().graphs]
    assert wrapper_file.endswith("/wrapper.cpp")
    # the SiLU line and the gating multiply both reach the line that launches their fused kernel
    for needle in ("F.silu(", "gated * self.up(x)"):
        launches = _launch_lines(run, needle)
        assert launches and all(line.file == wrapper_file for line in launches), needle
        assert all(launched in line.text for line in launches), launches


def test_aot_cpu_links_its_cpp_wrapper(aot_cpu):
    record, run = aot_cpu
    _check_cpp_wrapper(record, run, "cpp_fused_mul_silu_0(")
    wrapper = Path(run.view.absolute_path(run.view.details().graphs[0].files["wrapper"])).read_text()
    assert "AOTInductorModel::run_impl" in wrapper  # AOTInductor's model, not a Python module
    externs = [kernel for kernel in record.graphs[0].kernels if kernel.kind == "extern"]
    assert [kernel.name.split("#")[0] for kernel in externs] == ["aoti_torch_cpu_mm_out"] * 3
    assert all(kernel.nodes for kernel in externs)


def test_the_summary_counts_the_cpp_kernel_apart(aot_cpu):
    from kernelscope.cli.recording_output import render_overview, run_overview

    record, _ = aot_cpu
    assert "  1 C++ kernel(s), 3 extern call(s)" in render_overview(run_overview(record))


def test_aot_cpu_keeps_its_package_with_the_run(aot_cpu):
    record, run = aot_cpu
    package = run.view.details().config["aot_package"]
    stored = run.view.absolute_path(f"runs/{run.id}/{package['file']}")
    assert stored.stat().st_size == package["bytes"] == record.aot_package.bytes
    with zipfile.ZipFile(stored) as archive:
        assert sorted(archive.namelist()) == sorted(package["files"])
    assert any(name.endswith(".wrapper.cpp") for name in package["files"])
    assert any(name.endswith(".so") for name in package["files"])  # built and linked on the CPU


def test_the_dump_says_cpp_and_holds_the_package(aot_cpu):
    from kernelscope.store import validate_dump

    record, run = aot_cpu
    dumped = run.view.dump()
    validate_dump(dumped)
    (graph,) = dumped["run"]["graphs"]
    assert graph["wrapper_language"] == "cpp" and graph["wrapper_file"]["path"].endswith("wrapper.cpp")
    assert dumped["run"]["aot_package"]["file"] == "aot/model.pt2"
    assert "aot_package" not in dumped["run"]["config"] and dumped["run"]["config"]["aot"] is True
    assert {kernel["kind"] for kernel in graph["kernels"]} == {"cpp", "extern"}


def test_cpp_wrapper_mode_on_cpu_uses_the_same_linker(cpp_wrapper_cpu):
    record, run = cpp_wrapper_cpu
    _check_cpp_wrapper(record, run, "cpp_fused_mul_silu_0(")
    assert record.config.get("cpp_wrapper") is True and record.aot_package is None
    # the C++ Inductor compiles, taken out of the Python module that holds it as a string
    assert record.graphs[0].wrapper_text.lstrip().startswith("#include")


def test_cpp_wrapper_mode_on_virtual_cuda_links_its_triton_kernels(cpp_wrapper_virtual_cuda):
    record, run = cpp_wrapper_virtual_cuda
    _check_cpp_wrapper(record, run, "call_triton_poi_fused_mul_silu_0(")
    coverage = _coverage(record)
    assert coverage["kernel_lines"]["share"] == 1.0 and coverage["kernel_agreement"]["share"] == 1.0
    (triton,) = [kernel for kernel in record.graphs[0].kernels if kernel.kind == "triton"]
    assert any("tl.store(" in line.text for line in triton.lines)
    # the wrapper holds the kernel's module as a string: its lines are linked as the kernel's
    (exp,) = [origin for origin in record.graphs[0].wrapper_lines if "libdevice.exp(" in origin.text]
    assert exp.nodes == ["exp"] and exp.reason.startswith(f"defines kernel {triton.name}")


def test_export_failure_names_the_users_line_and_what_to_do():
    from kernelscope.engine.recorder import RecordOptions, record_factory

    with pytest.raises(TargetError) as raised:
        record_factory(f"{DATA / 'aot_data_dependent'}.py:make", RecordOptions(device="cpu", aot=True, workspace=REPO))
    message = str(raised.value)
    branch = next(number for number, line in enumerate((DATA / "aot_data_dependent.py").read_text().splitlines(), 1)
                  if "if h.sum() > 0" in line)
    assert f"aot_data_dependent.py:{branch}:" in message
    assert "torch.export failed" in message and "torch.cond" in message
    assert len(message.splitlines()) == 1


def test_aot_virtual_cuda_links_its_cuda_wrapper_and_triton_kernel(aot_virtual_cuda):
    """AOTInductor's CUDA build without a GPU: the wrapper is AOTInductor's model for cuda
    (`aoti_torch_cuda_mm_out`, the Triton kernel launched through `call_triton_...`), its
    lines and the kernel's linked as a GPU build's are."""
    record, run = aot_virtual_cuda
    _check_cpp_wrapper(record, run, "call_triton_poi_fused_mul_silu_0(")
    (graph,) = record.graphs
    assert "AOTInductorModel::run_impl" in graph.wrapper_text
    externs = [kernel.name.split("#")[0] for kernel in graph.kernels if kernel.kind == "extern"]
    assert externs == ["aoti_torch_cuda_mm_out"] * 3
    coverage = _coverage(record)
    assert coverage["kernel_lines"]["share"] == 1.0 and coverage["kernel_agreement"]["share"] == 1.0
    # the kernel's module, kept in a comment of the wrapper: its exp line there links to `exp`
    (exp,) = [origin for origin in graph.wrapper_lines if "libdevice.exp(" in origin.text]
    assert exp.nodes == ["exp"] and exp.reason.startswith("defines kernel triton_poi_fused_mul_silu_0")
    # and the SiLU model line reaches the Triton kernel's exp line
    answer = run.view.query(EXAMPLES / "swiglu_mlp.py", example_line("swiglu_mlp", "F.silu("))
    reached = [line for chain in answer.graphs for kernel in chain.kernels if kernel.kind == "triton"
               for line in kernel.lines]
    assert any("libdevice.exp(" in line.text and "exp" in line.nodes for line in reached), reached


def test_aot_virtual_cuda_keeps_the_sources_and_cubin_and_says_what_is_not_built(aot_virtual_cuda):
    record, run = aot_virtual_cuda
    files = run.view.details().config["aot_package"]["files"]
    assert any(name.endswith(".wrapper.cpp") for name in files)
    assert any(name.endswith("/CMakeLists.txt") for name in files)
    assert any(name.endswith("/triton_poi_fused_mul_silu_0.cubin") for name in files)  # ptxas's, for sm_90
    assert not any(name.endswith(".so") for name in files)  # not linked: no CUDA build of torch here
    with zipfile.ZipFile(run.view.absolute_path(f"runs/{run.id}/aot/model.pt2")) as archive:
        (cubin,) = [name for name in archive.namelist() if name.endswith(".cubin")]
        assert archive.read(cubin)[:4] == b"\x7fELF"
    assert any("not a built .so" in warning for warning in record.warnings)
    (chosen,) = [warning for warning in record.warnings if "Triton kernel triton_poi_fused_mul_silu_0" in warning]
    assert "the GPU times 2 configs" in chosen  # the pointwise kernel's two configs: which only a GPU can time


def test_aot_virtual_cuda_refuses_a_model_not_on_the_virtual_gpu():
    """`kernelscope.record(model, ...)` holds a CPU model: the virtual-cuda AOT build wants the
    factory's GPU program (its parameters on the virtual GPU), and says so in one line."""
    import runpy

    from kernelscope.engine.recorder import RecordOptions, record_model

    model, inputs = runpy.run_path(str(EXAMPLES / "swiglu_mlp.py"))["make"]()
    with pytest.raises(TargetError, match="not on the virtual GPU") as raised:
        record_model(model, inputs, RecordOptions(device="virtual-cuda", aot=True, workspace=REPO), "swiglu")
    assert len(str(raised.value).splitlines()) == 1


async def test_lsp_hover_goes_from_a_cpp_wrapper_line_to_the_model_line_and_back(aot_cpu):
    from lsp_support import start_session

    record, run = aot_cpu
    wrapper = run.view.absolute_path(run.view.details().graphs[0].files["wrapper"])
    launch = next(number for number, line in enumerate(wrapper.read_text().splitlines(), 1)
                  if line.strip().startswith("cpp_fused_mul_silu_0("))
    session = await start_session(REPO, {"store": str(run.store.path)})
    try:
        on_wrapper = (await session.hover(wrapper, launch - 1)).contents.value  # LSP lines count from 0
        assert "swiglu_mlp.py" in on_wrapper and "cpp_fused_mul_silu_0" in on_wrapper
        model = EXAMPLES / "swiglu_mlp.py"
        session.open(model)
        on_model = (await session.hover(model, example_line("swiglu_mlp", "F.silu(") - 1)).contents.value
        assert "wrapper.cpp" in on_model or f"L{launch}" in on_model, on_model
    finally:
        await session.stop()


def test_cpp_wrapper_links_an_inlined_cond_branch_to_its_call_site(tmp_path):
    """A C++ wrapper inlines each `torch.cond` branch in the body, with the branch's own nodes
    (which no graph of the run holds, and whose names may be the parent's: both have a `sub`):
    those lines, and the branch's kernels, link to the parent's cond node."""
    from kernelscope.api.recording import write_run
    from kernelscope.engine.recorder import RecordOptions, record_factory

    record = record_factory(f"{EXAMPLES / 'cond_branch'}.py:make",
                            RecordOptions(device="cpu", cpp_wrapper=True, workspace=REPO))
    run = write_run(record, tmp_path / ".kernelscope")
    (graph,) = record.graphs
    own = {node.name for node in graph.post_grad_nodes}
    assert all(set(origin.nodes) <= own for origin in graph.wrapper_lines)
    assert all(set(origin.nodes) <= own for kernel in graph.kernels for origin in kernel.lines)
    branch = [origin for origin in graph.wrapper_lines if "cpp_fused_gt_pow_sub_tanh" in origin.text
              and origin.reason.startswith("in a subgraph it calls: launches kernel")]
    assert branch and all("cond" in origin.nodes and "sub" not in origin.nodes for origin in branch)
    answer = run.view.query(EXAMPLES / "cond_branch.py", example_line("cond_branch", "torch.cond("))
    reached = {line.line for chain in answer.graphs for line in chain.wrapper_lines}
    assert {origin.line for origin in branch} <= reached


def test_aot_virtual_cuda_packages_the_cubin_below_the_kernel_builds(aot_virtual_cuda):
    """The package's cubin is the kernel as `query --asm` builds it (same config, same ptxas):
    the same SASS instructions (the bytes differ: debug sections name each build's kernel file)."""
    import re
    import subprocess

    from kernelscope.asm.tools import tool_path
    from kernelscope.engine.asm_build import build_run_asm

    _, run = aot_virtual_cuda
    summary = build_run_asm(run.store.backend, run.id)
    assert summary.built == 1, summary.failed
    folder = run.view.absolute_path(f"runs/{run.id}")
    with zipfile.ZipFile(folder / "aot" / "model.pt2") as archive:
        (name,) = [name for name in archive.namelist() if name.endswith(".cubin")]
        cubin = folder / "packaged.cubin"
        cubin.write_bytes(archive.read(name))
    packaged = subprocess.run([str(tool_path("nvdisasm")), "-c", str(cubin)], capture_output=True, text=True,
                              check=True).stdout
    (built,) = folder.rglob("triton_poi_fused_mul_silu_0.sass")

    def instructions(sass: str) -> list[str]:
        return [line.split(";")[0].strip() for line in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line)]

    assert instructions(packaged) == instructions(built.read_text()) and len(instructions(packaged)) > 20
