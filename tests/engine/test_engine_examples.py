"""Real recordings of the bundled examples (virtual-cuda, torch's CPU build): exact
assertions on what each model line became, in both directions."""
from __future__ import annotations

import pytest
from conftest import EXAMPLES, example_line

pytestmark = pytest.mark.slow


def nodes_at(graph, file_name: str, line: int) -> set[str]:
    return {
        n.name for n in graph.post_grad_nodes
        if n.source and n.source.file.endswith(file_name) and n.source.line == line
    }


def kernel_lines_for(run, file_name: str, line: int, kind: str | None = None):
    """(graph, kernel, LineOrigin) for kernel lines whose nodes came from file:line."""
    found = []
    for graph in run.graphs:
        if kind and graph.kind != kind:
            continue
        wanted = nodes_at(graph, file_name, line)
        for kernel in graph.kernels:
            for row in kernel.lines:
                if wanted & set(row.nodes) and not row.reason.startswith("shared"):
                    found.append((graph, kernel, row))
    return found


def wrapper_lines_for(run, file_name: str, line: int, kind: str | None = None):
    found = []
    for graph in run.graphs:
        if kind and graph.kind != kind:
            continue
        wanted = nodes_at(graph, file_name, line)
        found += [(graph, row) for row in graph.wrapper_lines if wanted & set(row.nodes)]
    return found


def source_of_kernel_line(graph, row):
    by_name = {n.name: n for n in graph.post_grad_nodes}
    return {(by_name[n].source.file.rsplit("/", 1)[-1], by_name[n].source.line)
            for n in row.nodes if by_name.get(n) and by_name[n].source}


def test_mlp_gelu_layernorm_softmax_reach_their_kernel_lines(recordings):
    run = recordings.get("mlp")
    assert run.device == "virtual-cuda" and run.provenance == "line" and not run.warnings
    gelu = kernel_lines_for(run, "mlp.py", example_line("mlp", "F.gelu"))
    assert any("libdevice.erf(" in row.text for _, _, row in gelu)
    norm = kernel_lines_for(run, "mlp.py", example_line("mlp", "self.norm(h)"))
    assert any("libdevice.rsqrt(" in row.text for _, _, row in norm)
    softmax = kernel_lines_for(run, "mlp.py", example_line("mlp", "torch.softmax"))
    assert any("libdevice.exp(" in row.text for _, _, row in softmax)
    # GELU's erf line does not claim the softmax's source.
    erf_rows = [row for _, _, row in gelu if "libdevice.erf(" in row.text]
    assert all("torch.softmax" not in row.text for row in erf_rows)


def test_mlp_linears_reach_their_own_wrapper_mm_calls(recordings):
    run = recordings.get("mlp")
    # fc1's bias add is fused into the GELU kernel, so fc1 is a plain mm; fc2 an addmm.
    fc1 = [row for _, row in wrapper_lines_for(run, "mlp.py", example_line("mlp", "self.fc1(x)"))]
    fc2 = [row for _, row in wrapper_lines_for(run, "mlp.py", example_line("mlp", "self.fc2(h)"))]
    fc1_calls = [row.text.strip() for row in fc1 if row.reason.startswith("calls extern kernel")]
    fc2_calls = [row.text.strip() for row in fc2 if row.reason.startswith("calls extern kernel")]
    assert len(fc1_calls) == 1 and fc1_calls[0].startswith("extern_kernels.mm(")
    assert len(fc2_calls) == 1 and fc2_calls[0].startswith("extern_kernels.addmm(")
    allocations = [row for row in fc2 if row.reason == "allocates output of"]
    assert allocations and "empty_strided_cuda" in allocations[0].text
    # The GELU line does not claim fc2's addmm call (it only feeds it).
    gelu = wrapper_lines_for(run, "mlp.py", example_line("mlp", "F.gelu"))
    assert not any("extern_kernels.addmm(" in row.text for _, row in gelu)


def test_mlp_kernel_line_queried_upward_reaches_the_model_line(recordings):
    run = recordings.get("mlp")
    (graph,) = run.graphs
    erf_rows = [
        (kernel, row) for kernel in graph.kernels for row in kernel.lines
        if "libdevice.erf(" in row.text
    ]
    assert len(erf_rows) == 1
    kernel, row = erf_rows[0]
    assert source_of_kernel_line(graph, row) == {("mlp.py", example_line("mlp", "F.gelu"))}
    # and the post-grad node knows its pre-grad node
    by_name = {n.name: n for n in graph.post_grad_nodes}
    pre_names = {n.name for n in graph.pre_grad_nodes}
    assert by_name[row.nodes[0]].from_pre_grad
    assert set(by_name[row.nodes[0]].from_pre_grad) <= pre_names


def test_virtual_cuda_emits_cuda_code(recordings):
    (graph,) = recordings.get("mlp").graphs
    assert "empty_strided_cuda" in graph.wrapper_text
    assert "DeviceProperties(type='cuda'" in graph.wrapper_text
    assert "cc=90" in graph.wrapper_text


def test_kernel_sets_equal_inductors_mapping(recordings):
    for example, train in [("mlp", False), ("mlp", True), ("conv_bn", False), ("attention", False)]:
        run = recordings.get(example, train=train)
        for graph in run.graphs:
            for kernel in graph.kernels:
                assert kernel.inductor_nodes is not None, (example, kernel.name)
                assert set(kernel.nodes) == set(kernel.inductor_nodes), (example, kernel.name)


def test_training_records_forward_and_backward(recordings):
    run = recordings.get("mlp", train=True)
    assert [g.kind for g in run.graphs] == ["forward", "backward"]
    backward = run.graphs[1]
    assert any(k.kind == "triton" for k in backward.kernels)
    # every backward op is traced to a forward model line
    calls = [n for n in backward.post_grad_nodes if n.op == "call_function"]
    assert calls and all(n.source is not None for n in calls)
    # backward kernels reach the forward GELU and LayerNorm lines
    gelu = kernel_lines_for(run, "mlp.py", example_line("mlp", "F.gelu"), kind="backward")
    norm = kernel_lines_for(run, "mlp.py", example_line("mlp", "self.norm(h)"), kind="backward")
    assert gelu and norm
    # the gradient of fc2 is an extern mm in the backward wrapper
    fc2 = wrapper_lines_for(run, "mlp.py", example_line("mlp", "self.fc2(h)"), kind="backward")
    assert any("extern_kernels.mm(" in row.text for _, row in fc2)


def test_graph_break_example_records_graphs_and_reasons(recordings):
    run = recordings.get("graph_break")
    assert len(run.graphs) >= 2
    assert len({g.compile_id for g in run.graphs}) == len(run.graphs)
    breaks = {(b.source.file.rsplit("/", 1)[-1], b.source.line): b.reason for b in run.graph_breaks}
    print_line = example_line("graph_break", "print(")
    branch_line = example_line("graph_break", "if h.mean()")
    assert "print" in breaks[("graph_break.py", print_line)] or "builtin" in breaks[("graph_break.py", print_line)]
    assert "Data-dependent branching" in breaks[("graph_break.py", branch_line)]
    # the sigmoid after the branch is in a later graph than the tanh before it
    tanh = kernel_lines_for(run, "graph_break.py", example_line("graph_break", "torch.tanh"))
    sigmoid = kernel_lines_for(run, "graph_break.py", example_line("graph_break", "torch.sigmoid"))
    assert tanh and sigmoid
    assert tanh[0][0].compile_id != sigmoid[0][0].compile_id


def test_conv_bn_relu(recordings):
    run = recordings.get("conv_bn")
    conv = wrapper_lines_for(run, "conv_bn.py", example_line("conv_bn", "self.conv(x)"))
    assert any("extern_kernels.convolution(" in row.text for _, row in conv)
    relu = kernel_lines_for(run, "conv_bn.py", example_line("conv_bn", "torch.relu"))
    assert any("triton_helpers.maximum(" in row.text for _, _, row in relu)
    bn = kernel_lines_for(run, "conv_bn.py", example_line("conv_bn", "self.bn(y)"))
    assert any("tl.sqrt_rn(" in row.text for _, _, row in bn)


def test_attention_softmax_and_projections(recordings):
    run = recordings.get("attention")
    qkv = wrapper_lines_for(run, "attention.py", example_line("attention", "self.qkv(x)"))
    assert any("extern_kernels.addmm(" in row.text or "extern_kernels.mm(" in row.text for _, row in qkv)
    norm = kernel_lines_for(run, "attention.py", example_line("attention", "self.norm(x + "))
    assert any("libdevice.rsqrt(" in row.text for _, _, row in norm)


def test_function_target(recordings):
    run = recordings.get("function")
    rsqrt = kernel_lines_for(run, "function.py", example_line("function", "torch.rsqrt"))
    assert any("libdevice.rsqrt(" in row.text for _, _, row in rsqrt)
    silu = kernel_lines_for(run, "function.py", example_line("function", "silu(gate)"))
    assert any("tl.sigmoid(" in row.text or "libdevice.exp(" in row.text or "tl_math.exp(" in row.text
               for _, _, row in silu)


def test_pre_grad_nodes_carry_source_lines(recordings):
    (graph,) = recordings.get("mlp").graphs
    lines = {n.source.line for n in graph.pre_grad_nodes if n.source}
    assert example_line("mlp", "self.fc1(x)") in lines
    assert all(n.graph_line > 0 for n in graph.pre_grad_nodes)
    assert all(n.graph_line > 0 for n in graph.post_grad_nodes)


def test_dynamic_batch_dimension(recordings):
    run = recordings.get("mlp", dynamic=True)
    (graph,) = run.graphs
    assert run.dynamic
    assert "s" in graph.wrapper_text and "ks0" in graph.wrapper_text or "s77" in graph.wrapper_text \
        or "s0" in graph.wrapper_text
    assert kernel_lines_for(run, "mlp.py", example_line("mlp", "F.gelu"))


def test_examples_exist_for_every_documented_kind():
    assert {p.stem for p in EXAMPLES.glob("*.py")} >= {"mlp", "attention", "conv_bn", "graph_break", "function"}
