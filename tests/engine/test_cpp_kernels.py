"""Inductor's C++/OpenMP backend (`--target cpu`, engine/cpp_kernels.py): each `cpp_fused_*`
kernel kept as a `.cpp` file with its lines linked to post-grad nodes and model lines.

The fast tests read wrapper text and a capture made by hand (no torch); the slow ones record
examples/swiglu_mlp.py on `--target cpu` (compiled and run, once per session)."""
from __future__ import annotations

import pytest
from conftest import example_line

from kernelscope.compile_text import wrapper_code
from kernelscope.engine import cpp_kernels
from kernelscope.run_record import SHARED_LINE_REASON_PREFIX
from kernelscope.store.writing.coverage import compute_coverage

WRAPPER = """\
cpp_fused_mul_silu_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0)
{
    #pragma omp parallel
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
        {
            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
            auto tmp1 = tmp0.exp();
            tmp1.store(out_ptr0 + static_cast<int64_t>(x0));
        }
    }
}
''')
halide_kernel_0 = async_compile.halide(meta0, '''
''')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, = args
    buf0 = empty_strided_cpu((16, ), (1, ), torch.float32)
    # [Provenance debug handles] cpp_fused_mul_silu_0:1
    cpp_fused_mul_silu_0(arg0_1, buf0)
    return (buf0, )
"""


def test_wrapper_layout_reads_cpp_kernel_blocks_and_calls():
    layout = wrapper_code.read_layout(WRAPPER)
    [block] = layout.kernel_blocks
    assert (block.name, block.language, block.first_line) == ("cpp_fused_mul_silu_0", "cpp", 2)
    assert block.source.splitlines()[wrapper_code.kernel_body_start(block.source) - 1] == "{"
    call = next(n for n, line in enumerate(WRAPPER.splitlines(), 1) if line.strip().startswith("cpp_fused_mul_silu_0("))
    assert layout.handles[call] == ("cpp_fused_mul_silu_0", 1)
    assert wrapper_code.line_reason(WRAPPER.splitlines()[call - 1]) == "launches kernel cpp_fused_mul_silu_0"
    assert wrapper_code.unrecorded_kernels(WRAPPER) == [("halide_kernel_0", "halide")]


def test_cpp_kernel_lines_take_the_recorded_loop_code_and_set_up_around_it():
    source = wrapper_code.read_layout(WRAPPER).kernel_blocks[0].source
    nest = cpp_kernels.LoopNest(["exp"], {"auto tmp1 = tmp0.exp();": ("exp", "computes")})
    loop_code = [line.strip() for line in source.splitlines()[4:-1]]  # `#pragma omp parallel` ... its `}`
    body = [(text, *nest.attribute(text)) for text in loop_code]
    lines = cpp_kernels.kernel_lines(source, cpp_kernels.CppKernelCapture(["exp"], body), ["exp"])
    rows = {row.text.strip(): row for row in lines}
    assert (rows["auto tmp1 = tmp0.exp();"].nodes, rows["auto tmp1 = tmp0.exp();"].reason) == (["exp"], "computes")
    assert rows["#pragma omp parallel"].reason.startswith(SHARED_LINE_REASON_PREFIX + " OpenMP")
    assert lines[0].text == "{" and lines[0].reason == cpp_kernels.KERNEL_SETUP_REASON  # the function's own
    assert lines[2].text.strip() == "{" and lines[2].reason == cpp_kernels.NEST_REASON  # the nest's
    assert all(row.nodes == ["exp"] for row in lines) and len(lines) == len(source.splitlines()) - 3
    assert cpp_kernels.assignment_target("auto tmp1 = tmp0.exp();") == "tmp1"
    assert cpp_kernels.assignment_target("tmp_acc0_vec = tmp_acc0_vec + tmp3;") == "tmp_acc0_vec"
    assert cpp_kernels.assignment_target("if(tmp0 == tmp1)") is None


TEMPLATE = """\
extern "C" void kernel(const float* X, const float* W, float* Y)
{
    constexpr int64_t N = 128;
    kernel_micro_gemm(X, W, Y);
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
    {
        auto tmp0 = Y[static_cast<int64_t>(x0)];
        auto tmp1 = std::max(tmp0, decltype(tmp0)(0));
        Y[static_cast<int64_t>(x0)] = tmp1;
    }
}
"""


def test_a_cpp_templates_epilogue_lines_link_to_the_fused_nodes_its_own_code_to_the_template_node():
    nest = cpp_kernels.LoopNest(["mm", "relu"], {"auto tmp0 = Y[static_cast<int64_t>(x0)];": ("mm", "loads input of"),
                                     "=tmp0": ("mm", "loads input of"),
                                     "auto tmp1 = std::max(tmp0, decltype(tmp0)(0));": ("relu", "computes"),
                                     "=tmp1": ("relu", "computes")})
    epilogue = [(text, *nest.attribute(text)) for text in
                [line.strip() for line in TEMPLATE.splitlines()[4:10]]]  # its `for(` ... `}`
    capture = cpp_kernels.CppKernelCapture(["mm", "relu"], [], template_node="mm", epilogues=[epilogue])
    rows = {row.text.strip(): row for row in cpp_kernels.kernel_lines(TEMPLATE, capture, ["mm", "relu"])}
    assert (rows["constexpr int64_t N = 128;"].nodes, rows["constexpr int64_t N = 128;"].reason) == (
        ["mm"], "template code of")
    assert rows["kernel_micro_gemm(X, W, Y);"].nodes == ["mm"]
    relu = rows["auto tmp1 = std::max(tmp0, decltype(tmp0)(0));"]
    assert (relu.nodes, relu.reason) == (["relu"], "computes")
    store = rows["Y[static_cast<int64_t>(x0)] = tmp1;"]  # written by no node: the value's producer
    assert (store.nodes, store.reason) == (["relu"], "stores result of")
    loop = next(row for text, row in rows.items() if text.startswith("for("))
    assert loop.nodes == ["mm", "relu"] and loop.reason.startswith(SHARED_LINE_REASON_PREFIX)


def _silu_rows(run, kind: str):
    line = example_line("swiglu_mlp", "F.silu(")
    rows = []
    for graph in run.graphs:
        if graph.kind != kind:
            continue
        nodes = {n.name for n in graph.post_grad_nodes
                 if n.source and n.source.file.endswith("examples/swiglu_mlp.py") and n.source.line == line}
        rows += [(kernel, row) for kernel in graph.kernels if kernel.kind == "cpp" for row in kernel.lines
                 if nodes & set(row.nodes) and not row.reason.startswith(SHARED_LINE_REASON_PREFIX)]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
def test_swiglu_silu_line_reaches_the_cpp_line_computing_its_exp(recordings, train):
    run = recordings.get("swiglu_mlp", device="cpu", train=train)
    assert run.device == "cpu" and not run.warnings
    kind = "forward" if train else "inference"
    rows = _silu_rows(run, kind)
    exp_rows = [(kernel, row) for kernel, row in rows if row.text.strip() == "auto tmp2 = tmp1.exp();"]
    assert exp_rows, [row.text for _, row in rows]
    [(kernel, row)] = exp_rows
    assert kernel.name == "cpp_fused_mul_silu_0" and row.reason == "computes" and row.nodes == ["exp"]
    assert kernel.source.splitlines()[row.line - 1].strip() == "auto tmp2 = tmp1.exp();"
    # the wrapper's call of the kernel links to every node the kernel computes
    (graph,) = [g for g in run.graphs if g.kind == kind]
    [call] = [w for w in graph.wrapper_lines if w.text.strip().startswith("cpp_fused_mul_silu_0(")]
    assert set(call.nodes) == set(kernel.nodes) and call.reason == "launches kernel cpp_fused_mul_silu_0"
    coverage = compute_coverage(run)
    assert coverage["kernel_agreement"]["share"] == 1.0 and coverage["kernel_lines"]["share"] == 1.0
    assert coverage["wrapper_lines"]["share"] == 1.0
    if train:  # the backward recomputes SiLU: its exp has a line of its own there
        back = [row for _, row in _silu_rows(run, "backward") if row.text.strip().endswith(".exp();")]
        assert back


@pytest.mark.slow
def test_cpp_kernels_are_stored_as_cpp_files_and_queried_both_ways(recordings, tmp_path):
    from conftest import EXAMPLES

    from kernelscope.store import StoreBackend

    root = tmp_path / ".kernelscope"
    line = example_line("swiglu_mlp", "F.silu(")
    with StoreBackend(root) as store:
        run_id = store.write_run(recordings.get("swiglu_mlp", device="cpu"))
        down = store.query(str(EXAMPLES / "swiglu_mlp.py"), line, run_id=run_id)
        [kernel] = [k for chain in down.graphs for k in chain.kernels if k.kind == "cpp"]
        assert kernel.file.endswith("/kernels/cpp_fused_mul_silu_0.cpp") and (root / kernel.file).is_file()
        [exp] = [ref for ref in kernel.lines if ref.text.strip() == "auto tmp2 = tmp1.exp();"]
        up = store.query(kernel.file, exp.line, run_id=run_id)
        sources = {(s.file, s.line) for chain in up.graphs for s in chain.sources}
        assert any(file.endswith("examples/swiglu_mlp.py") and number == line for file, number in sources)


@pytest.mark.slow
def test_a_cpu_script_under_auto_records_its_cpp_kernels(capsys):
    """Without a GPU `auto` is virtual-cuda; a program's graph of CPU tensors is compiled for the
    CPU there (as `auto` does on a GPU machine), its C++ kernel recorded and run."""
    from conftest import EXAMPLES, REPO

    from kernelscope.engine.recorder import RecordOptions, record_script

    run = record_script(EXAMPLES / "cpu_script.py", [], RecordOptions(device="auto", workspace=REPO))
    assert "sum " in capsys.readouterr().out  # the compiled code ran
    [graph] = run.graphs
    [kernel] = [k for k in graph.kernels if k.kind != "extern"]
    assert kernel.kind == "cpp" and kernel.name.startswith("cpp_fused_")
    sigmoid = example_line("cpu_script", "torch.sigmoid(")
    nodes = {n.name for n in graph.post_grad_nodes if n.source and n.source.line == sigmoid}
    assert any(nodes & set(row.nodes) and "sigmoid" in row.text.lower() or ".exp()" in row.text
               for row in kernel.lines if row.reason == "computes")


@pytest.mark.slow
def test_cpp_gemm_templates_epilogue_lines_link_to_the_fused_nodes():
    """max-autotune on the CPU with freezing: Inductor's CPP GEMM template (needs a vector ISA
    its micro-kernels support: AVX2, AVX-512 or AMX) with ReLU, mul and add fused after it."""
    import torch._inductor.config as inductor_config
    from conftest import REPO

    from kernelscope.engine.recorder import RecordOptions, record_factory

    factory = REPO / "tests" / "data" / "cpp_gemm_epilogue.py"
    with inductor_config.patch(freezing=True, max_autotune=True, max_autotune_gemm_backends="CPP"):
        run = record_factory(f"{factory}:make", RecordOptions(device="cpu", workspace=REPO))
    [graph] = run.graphs
    kernels = [k for k in graph.kernels if k.kind == "cpp"]
    if not any("micro_gemm" in k.source for k in kernels):
        pytest.skip("Inductor did not pick its C++ GEMM template on this CPU (no vector ISA its micro-kernels use)")
    [kernel] = kernels
    source_lines = factory.read_text().splitlines()

    def line_of(snippet: str) -> int:
        return next(number for number, text in enumerate(source_lines, 1) if snippet in text)

    by_name = {node.name: node for node in graph.post_grad_nodes}
    rows = {row.line: row for row in kernel.lines}
    text = kernel.source.splitlines()
    clamp = [row for row in kernel.lines if "clamp_min(" in row.text]
    assert clamp and all(row.nodes == ["relu"] and row.reason == "computes" for row in clamp)
    assert by_name["relu"].source.line == line_of("torch.relu(h)")
    assert {by_name[name].source.line for row in kernel.lines if "tmp3 * tmp4" in row.text for name in row.nodes} \
        == {line_of("h * y + 1.0")}
    stores = [row for row in kernel.lines if ".store(" in row.text]
    assert stores and all(row.nodes == ["add"] and row.reason == "stores result of" for row in stores)
    # the template's own code (its micro-kernel calls, blocking constants) computes the GEMM
    template = [row for row in kernel.lines if row.reason == "template code of"]
    assert template and all(row.nodes == ["_mkl_linear"] for row in template)
    assert any("kernel_micro_gemm" in row.text for row in template)
    assert by_name["_mkl_linear"].source.line == line_of("self.fc(x)")
    assert all(text[number - 1] == row.text for number, row in rows.items())
    coverage = compute_coverage(run)
    assert coverage["kernel_lines"]["share"] == 1.0 and coverage["kernel_agreement"]["share"] == 1.0
