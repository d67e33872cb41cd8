"""Higher-order ops' subgraphs and foreach kernels, recorded for real (virtual-cuda):
`torch.cond`'s branches, `while_loop`'s cond and body and a nested compile region are
subgraphs nested in the graph that calls them (labels, call sites, nodes traced to the
branch's lines and on to their kernels, no kernel listed twice or with no node); a compiled
AdamW step's and a compiled SGD step's foreach kernels are tied to their nodes, the
optimizer's lines, their parameter groups and parameters, and the script's `step()` line.
Each example is recorded once per session (conftest.RecordingCache)."""
from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES, example_line

import kernelscope.cli
from kernelscope.api.answer import ask
from kernelscope.store import SCHEMA_VERSION, StoreBackend, validate_dump
from kernelscope.store.writing.coverage import compute_coverage

pytestmark = pytest.mark.slow


def subgraphs(run) -> dict[str, object]:
    return {graph.subgraph.label: graph for graph in run.graphs if graph.subgraph is not None}


def top(run):
    return [graph for graph in run.graphs if graph.subgraph is None]


def assert_flat_attribution(run) -> None:
    """Every kernel line and wrapper line attributed, as on a flat model; no kernel without nodes,
    none listed twice."""
    coverage = compute_coverage(run)
    assert coverage["kernel_lines"]["share"] == 1.0, coverage["kernel_lines"]
    assert coverage["wrapper_lines"]["share"] == 1.0, coverage["wrapper_lines"]
    triton = [kernel for graph in run.graphs for kernel in graph.kernels if kernel.kind != "extern"]
    assert triton and all(kernel.nodes for kernel in triton)
    names = [(graph.key, kernel.name) for graph in run.graphs for kernel in graph.kernels if kernel.kind != "extern"]
    assert len(names) == len(set(names))  # (a recompile's graph names its kernels afresh)


def store_of(run, tmp_path):
    store = StoreBackend(tmp_path / ".kernelscope")
    return store, store.write_run(run)


def cli(capsys, *argv: str) -> str:
    assert kernelscope.cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_cond_branches_are_subgraphs_of_the_graph_that_calls_them(recordings):
    run = recordings.get("cond_branch")
    (parent,) = top(run)
    cond_line = example_line("cond_branch", "torch.cond(")
    true_label = f"cond: true branch of Gate.forward (cond_branch.py:{cond_line})"
    false_label = f"cond: false branch of Gate.forward (cond_branch.py:{cond_line})"
    found = subgraphs(run)
    assert set(found) == {true_label, false_label}
    for label, line in ((true_label, "torch.sigmoid(h)"), (false_label, "torch.tanh(h)")):
        graph = found[label]
        assert graph.subgraph.op == "cond" and graph.subgraph.parent == parent.key
        assert graph.subgraph.call_sites == ["cond"] and "cond" in {n.name for n in parent.post_grad_nodes}
        assert graph.key == f"{parent.key}-{graph.subgraph.name}"
        calls = [n for n in graph.post_grad_nodes if n.op == "call_function"]
        assert calls and {(n.source.file.rsplit("/", 1)[-1], n.source.line) for n in calls} == {
            ("cond_branch.py", example_line("cond_branch", line))}
        # the branch's nodes came from Dynamo's branch subgraph, not the parent's pre-grad graph
        assert {pre for n in calls for pre in n.from_pre_grad} <= {n.name for n in graph.pre_grad_nodes}
        assert all(n.from_pre_grad for n in calls)
        (kernel,) = [k for k in graph.kernels if k.kind == "triton"]
        own = {n.name for n in graph.post_grad_nodes}
        assert set(kernel.nodes) <= own and all(set(row.nodes) <= own for row in kernel.lines)
    assert_flat_attribution(run)
    # the parent's copy of each branch's code links to the cond node, its kernels are the branches'
    spliced = [row for row in parent.wrapper_lines if row.reason.startswith("subgraph ")]
    assert spliced and all(row.nodes == ["cond"] for row in spliced)
    assert not any(k.name in {b.name for g in found.values() for b in g.kernels} for k in parent.kernels)


def test_cond_in_show_dump_and_query(recordings, tmp_path, capsys):
    run = recordings.get("cond_branch")
    store, run_id = store_of(run, tmp_path)
    with store:
        graphs = store.run(run_id).details().graphs
        labels = [graph.label for graph in graphs]
        assert labels[0] == "0/0 inference" and labels[1].startswith("cond: true branch of Gate.forward")
        assert [graph.subgraph.parent for graph in graphs[1:]] == [graphs[0].key] * 2
        answer = store.query("examples/cond_branch.py", example_line("cond_branch", "torch.sigmoid(h)"), run_id,
                             detail=False)
        assert [chain.graph.title for chain in answer.graphs] == [labels[1]]
        # the torch.cond line reaches its own nodes and, via call, each branch's
        cond_line = store.query("examples/cond_branch.py", example_line("cond_branch", "torch.cond("), run_id,
                                detail=False)
        assert [chain.graph.title for chain in cond_line.graphs] == labels
        assert all(node.via == "call" for chain in cond_line.graphs[1:] for node in chain.post_nodes)
        assert all(chain.kernels for chain in cond_line.graphs)
        dumped = store.run(run_id).dump()
    validate_dump(dumped)
    by_key = {graph["key"]: graph for graph in dumped["run"]["graphs"]}
    assert by_key[graphs[0].key]["subgraph"] is None
    assert by_key[graphs[1].key]["subgraph"] == {
        "name": "true_graph_0", "op": "cond", "role": "true branch", "parent": graphs[0].key,
        "call_sites": ["cond"], "label": labels[1]}
    shown = cli(capsys, "show", str(run_id), "--store", str(tmp_path / ".kernelscope"))
    assert "DDP" not in shown and "part" not in shown.split("kernels")[0]
    assert f"    {labels[1]}  [{graphs[1].key}]  called by cond" in shown
    shown_json = json.loads(cli(capsys, "show", str(run_id), "--json", "--store", str(tmp_path / ".kernelscope")))
    assert [(graph["subgraph"] or {}).get("label") for graph in shown_json["graphs"]] == [None, *labels[1:]]
    dump_text = cli(capsys, "dump", "--run", str(run_id), "--store", str(tmp_path / ".kernelscope"))
    assert json.loads(dump_text)["schema_version"] == SCHEMA_VERSION


def test_cond_backward_branches_are_labelled(recordings):
    run = recordings.get("cond_branch", train=True)
    backward = [graph for graph in run.graphs if graph.kind == "backward" and graph.subgraph is not None]
    assert sorted(graph.subgraph.role for graph in backward) == ["false branch", "true branch"]
    assert all("(backward) of Gate.forward" in graph.subgraph.label for graph in backward)
    assert_flat_attribution(run)


def test_nested_region_is_one_subgraph_with_every_call_site(recordings, tmp_path):
    run = recordings.get("nested_region")
    (parent,) = top(run)
    (region,) = subgraphs(run).values()
    assert region.subgraph.label == "nested region Block.forward, 4 call sites"
    assert region.subgraph.op == "invoke_subgraph" and region.subgraph.parent == parent.key
    sites = region.subgraph.call_sites
    assert len(sites) == 4 and all(
        node.target == "torch.ops.higher_order.invoke_subgraph"
        for node in parent.post_grad_nodes if node.name in sites)
    gelu = example_line("nested_region", "F.gelu(")
    assert any(n.source and n.source.line == gelu for n in region.post_grad_nodes if n.target == "aten.erf.default")
    assert_flat_attribution(run)
    store, run_id = store_of(run, tmp_path)
    with store:
        answer = store.query("examples/nested_region.py", gelu, run_id, detail=False)
        assert region.subgraph.label in [chain.graph.title for chain in answer.graphs]


def test_nested_region_training_has_a_forward_and_a_backward_region(recordings):
    """`--train` on virtual-cuda: the forward and the backward region, each called from the
    `invoke_subgraph` nodes of its own graph. (The eager run of Dynamo's graph calls the regions
    inline, devices/eager_regions: torch's invoke_subgraph backward asserts a fake mode.)"""
    run = recordings.get("nested_region", train=True)
    found = subgraphs(run)
    sites = {graph.kind: len(graph.subgraph.call_sites) for graph in found.values()}
    assert set(found) == {f"nested region Block.forward, {sites['forward']} call sites",
                          f"nested region Block.forward (backward), {sites['backward']} call sites"}
    assert sites["forward"] == sites["backward"] >= 3  # the first call, whose input needs no gradient, is inlined
    graphs = {graph.key: graph for graph in run.graphs}
    for region in found.values():
        parent = graphs[region.subgraph.parent]
        assert parent.subgraph is None and parent.kind == region.kind
        callers = [node for node in parent.post_grad_nodes if node.name in region.subgraph.call_sites]
        assert len(callers) == len(region.subgraph.call_sites)
        assert all(node.target == "torch.ops.higher_order.invoke_subgraph" for node in callers)
    assert_flat_attribution(run)


def test_while_loop_cond_and_body_are_subgraphs(recordings):
    run = recordings.get("while_loop")
    line = example_line("while_loop", "= while_loop(")
    found = subgraphs(run)
    assert set(found) == {f"while_loop: cond of Smoother.forward (while_loop.py:{line})",
                          f"while_loop: body of Smoother.forward (while_loop.py:{line})"}
    body = found[f"while_loop: body of Smoother.forward (while_loop.py:{line})"]
    tanh = example_line("while_loop", "torch.tanh(h)")
    assert any(n.source and n.source.line == tanh for n in body.post_grad_nodes if n.target == "aten.tanh.default")
    assert_flat_attribution(run)


def test_compiled_adamw_step_foreach_kernels_reach_the_step_line(recordings, tmp_path):
    run = recordings.get_script("optimizer_step")
    foreach = [k for graph in run.graphs for k in graph.kernels if k.name.startswith("triton_for_fused_")]
    assert len(foreach) >= 2 and all(kernel.nodes for kernel in foreach)
    assert_flat_attribution(run)
    (graph,) = [graph for graph in run.graphs if any(k in graph.kernels for k in foreach)]
    by_name = {node.name: node for node in graph.post_grad_nodes}
    step_line = example_line("optimizer_step", "step()  # the compiled")
    for kernel in foreach:
        sources = {by_name[name].source.file.rsplit("/", 1)[-1] for name in kernel.nodes}
        assert sources == {"adam.py"}  # AdamW's foreach update is Adam's _multi_tensor_adam
        stacks = [by_name[name].stack for name in kernel.nodes]
        assert all(any(frame.file.endswith("optimizer_step.py") and frame.line == step_line for frame in stack)
                   for stack in stacks)
    # a sub-kernel's shared lines name that sub-kernel's nodes, not the whole kernel's
    big = max(foreach, key=lambda kernel: len(kernel.nodes))
    shared = [row for row in big.lines if row.reason.startswith("shared") and "pid_offset" in row.text]
    assert shared and all(len(row.nodes) < len(big.nodes) for row in shared)
    store, run_id = store_of(run, tmp_path)
    with store:
        answer = store.query("examples/optimizer_step.py", step_line, run_id, detail=False)
    assert not answer.empty, "the script's step() line answers nothing"
    assert {kernel.name for chain in answer.graphs for kernel in chain.kernels} == {k.name for k in foreach}
    assert all(node.via == "call" for chain in answer.graphs for node in chain.post_nodes)


def test_compiled_sgd_step_sub_kernels_name_their_group_parameters_and_step_line(recordings, tmp_path, capsys):
    """SGD with momentum from named parameters in two groups (weights decayed, biases not):
    each foreach sub-kernel updates one parameter, named with its group; its nodes come from
    sgd.py, up the stack from the script's `step()` line, which reaches every sub-kernel."""
    run = recordings.get_script("sgd_step")
    assert_flat_attribution(run)
    foreach = [(graph, k) for graph in run.graphs for k in graph.kernels if k.name.startswith("triton_for_fused_")]
    assert foreach and all(kernel.nodes and kernel.parts for _, kernel in foreach)
    step_line = example_line("sgd_step", "step()  # the compiled")
    expected = {(0, "0.weight", (64, 32)), (0, "2.weight", (8, 64)), (1, "0.bias", (64,)), (1, "2.bias", (8,))}
    for graph in {graph.key: graph for graph, _ in foreach}.values():  # the first step and the momentum step
        parts = [part for kernel in graph.kernels for part in kernel.parts]
        assert all(len(part.params) == 1 for part in parts)  # one parameter per sub-kernel
        assert {(p.group, p.name, tuple(p.shape)) for part in parts for p in part.params} == expected
        by_name = {node.name: node for node in graph.post_grad_nodes}
        for kernel in graph.kernels:
            for part in kernel.parts:
                assert part.nodes and set(part.nodes) <= set(kernel.nodes)
                assert {by_name[name].source.file.rsplit("/", 1)[-1] for name in part.nodes} == {"sgd.py"}
                assert all(any(frame.file.endswith("sgd_step.py") and frame.line == step_line
                               for frame in by_name[name].stack) for name in part.nodes)
                # the sub-kernel's block of lines is tied to its own nodes
                block = [row for row in kernel.lines if part.first_line <= row.line <= part.last_line]
                assert block and all(set(row.nodes) <= set(part.nodes) for row in block)
    store, run_id = store_of(run, tmp_path)
    with store:
        answer = ask(store, "examples/sgd_step.py", step_line, run_id)
        assert {(part.kernel, part.graph.key) for part in answer.kernel_parts} == {
            (kernel.name, graph.key) for graph, kernel in foreach}
        assert all(part.called_from == [f"examples/sgd_step.py:{step_line} main"] for part in answer.kernel_parts)
        printed = str(answer)
        assert "param_groups[0]: 0.weight (64, 32)" in printed and "param_groups[1]: 2.bias (8)" in printed
        graph, kernel = foreach[0]
        part = kernel.parts[-1]
        view = store.run(run_id)
        (kernel_file,) = [info.file for info in view.kernels().values()
                          if (info.graph_key, info.name) == (graph.key, kernel.name)]
        at_line = ask(store, kernel_file, part.first_line + 2, run_id)
        (found,) = at_line.kernel_parts
        assert (found.kernel, found.part) == (kernel.name, part.index)
        assert found.params == [{"group": p.group, "index": p.index, "name": p.name, "shape": p.shape}
                                for p in part.params]
        assert found.sources and all("torch/optim/sgd.py:" in source for source in found.sources)
        assert at_line.to_dict()["kernel_parts"][0]["params"] == found.params
        dumped = view.dump()
    validate_dump(dumped)
    dumped_kernel = next(k for graph in dumped["run"]["graphs"] if graph["key"] == foreach[0][0].key
                         for k in graph["kernels"] if k["name"] == kernel.name)
    assert dumped_kernel["parts"][-1] == {"index": part.index, "first_line": part.first_line,
                                          "last_line": part.last_line, "nodes": part.nodes,
                                          "params": found.params}
    shown = cli(capsys, "show", str(run_id), "--store", str(tmp_path / ".kernelscope"))
    section = shown[shown.index("foreach sub-kernels: "):]
    assert "updating 4 optimizer parameter(s)" in section.splitlines()[0]
    assert f"called from examples/sgd_step.py:{step_line} main" in section
    assert ": param_groups[0]: 0.weight (64, 32)" in section and ": param_groups[1]: 2.bias (8)" in section
    shown_json = json.loads(cli(capsys, "show", str(run_id), "--json", "--store", str(tmp_path / ".kernelscope")))
    assert {param["name"] for part in shown_json["kernel_parts"] for param in part["params"]} == {
        "0.weight", "2.weight", "0.bias", "2.bias"}


def test_compiled_adamw_sub_kernels_name_parameters_by_index_and_shape(recordings):
    """AdamW built from `model.parameters()` (no names): each sub-kernel, the step counters'
    included, names its parameter by group, index and shape."""
    run = recordings.get_script("optimizer_step")
    parts = [part for graph in run.graphs for kernel in graph.kernels for part in kernel.parts]
    assert parts and all(len(part.params) == 1 and part.params[0].name == "" for part in parts)
    assert {(p.group, p.index, tuple(p.shape)) for part in parts for p in part.params} == {
        (0, 0, (64, 32)), (0, 1, (64,)), (0, 2, (8, 64)), (0, 3, (8,))}


def test_fused_sgd_is_not_compiled_by_torch(tmp_path):
    """`SGD(fused=True)`: torch wraps `_fused_sgd` in `torch.compiler.disable`, Dynamo skips the
    step and it runs eagerly; a script compiling only the step has nothing to record."""
    from kernelscope.engine.recorder import RecordOptions, record_script
    from kernelscope.errors import CompileError

    said = (r"compiled nothing with torch.compile; Dynamo ran it eagerly: .*"
            r"Skip calling `torch.compiler.disable\(\)`d function at \S*torch/optim/sgd\.py")
    with pytest.raises(CompileError, match=said):
        record_script(EXAMPLES / "sgd_step.py", ["--fused"], RecordOptions(device="virtual-cuda", workspace=tmp_path))


def test_scan_and_map_are_labelled_as_written_and_traced_to_their_functions(recordings):
    """Inductor rewrites `scan` and `map` as a while_loop: its subgraphs are labelled as the
    combine_fn and body they are, their ops reach those functions' lines (the pass drops the
    ops' stack traces; they come from the subgraph it was given), the loop's own ops the
    scan/map line."""
    run = recordings.get("scan_map")
    scan_line, map_line = example_line("scan_map", "= scan(step"), example_line("scan_map", "loop_map(per_step, ys)")
    found = subgraphs(run)
    combine = f"scan: combine_fn of Recurrence.forward (scan_map.py:{scan_line}), as while_loop body"
    body = f"map: body of Recurrence.forward (scan_map.py:{map_line}), as while_loop body"
    assert set(found) == {combine, body,
                          f"scan: loop condition of Recurrence.forward (scan_map.py:{scan_line}), as while_loop cond",
                          f"map: loop condition of Recurrence.forward (scan_map.py:{map_line}), as while_loop cond"}
    assert all(graph.subgraph.op == "while_loop" for graph in found.values())
    lines = {label: {(node.target, node.source.line) for node in found[label].post_grad_nodes
                     if node.op == "call_function"} for label in (combine, body)}
    assert ("aten.tanh.default", example_line("scan_map", "h = torch.tanh(")) in lines[combine]
    assert ("aten.mul.Tensor", example_line("scan_map", "return h, h * 2.0")) in lines[combine]
    assert ("aten.sigmoid.default", example_line("scan_map", "torch.sigmoid(self.out(y)) * y")) in lines[body]
    assert ("aten._local_scalar_dense.default", scan_line) in lines[combine]  # the loop reads its step
    assert ("aten._local_scalar_dense.default", map_line) in lines[body]
    assert all(node.source is not None for graph in run.graphs for node in graph.post_grad_nodes
               if node.op == "call_function")
    assert_flat_attribution(run)


def test_map_training_has_backward_loop_subgraphs(recordings):
    run = recordings.get_spec(f"{EXAMPLES}/scan_map.py:make_map", train=True)
    line = example_line("scan_map", "loop_map(per_step, xs)")
    assert set(subgraphs(run)) == {
        f"map: {role}{backward} of StepMap.forward (scan_map.py:{line}), as while_loop {loop}"
        for role, loop in (("loop condition", "cond"), ("body", "body")) for backward in ("", " (backward)")}
    assert all(node.source is not None for graph in run.graphs for node in graph.post_grad_nodes
               if node.op == "call_function")
    assert_flat_attribution(run)


def test_scan_without_capture_scalar_outputs_is_refused_naming_the_line(tmp_path):
    """torch cannot compile `scan` or `map` unless Dynamo captures scalar outputs: the error
    names the construct, its line and the setting, and the factory's setting does not leak."""
    import torch

    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.errors import CompileError

    model = tmp_path / "loop.py"
    model.write_text(
        "import torch\nfrom torch._higher_order_ops.map import map as loop_map\n\n\n"
        "class Double(torch.nn.Module):\n    def forward(self, xs):\n"
        "        return loop_map(lambda x: torch.sin(x) * 2, xs)\n\n\n"
        "def make():\n    torch._dynamo.config.capture_scalar_outputs = False\n"
        "    return Double(), (torch.randn(4, 8),)\n")
    before = torch._dynamo.config.capture_scalar_outputs
    with pytest.raises(CompileError, match=r"loop\.py:7: torch\.compile cannot compile this `map` unless "
                                           r"torch\._dynamo\.config\.capture_scalar_outputs = True"):
        record_factory(f"{model}:make", RecordOptions(device="virtual-cuda", workspace=tmp_path))
    assert torch._dynamo.config.capture_scalar_outputs == before


def test_while_loop_training_without_capture_scalar_outputs_says_why():
    """Its backward loop fails in Inductor, Dynamo falls back to eager and nothing is left to
    record: the error names the fallback, its line and the setting."""
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.errors import CompileError

    expected = (r"no graph to record: Dynamo fell back to eager at \S*examples/while_loop\.py:\d+ "
                r"\(Backend compiler `inductor` failed with aten\._local_scalar_dense.*capture_scalar_outputs = True")
    with pytest.raises(CompileError, match=expected):
        record_factory(f"{EXAMPLES}/while_loop.py:make", RecordOptions(device="virtual-cuda", train=True,
                                                                      workspace=EXAMPLES.parent))


def test_pointwise_associative_scan_records_on_the_virtual_gpu_and_is_refused_on_cpu_tensors(tmp_path):
    """Pointwise mode checks for GPU tensors: a factory runs on the virtual GPU under
    virtual-cuda (the scan becomes one Triton kernel with `tl.associative_scan`); cpu-triton
    captures on CPU tensors and is refused with what to do."""
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.errors import TargetError

    model = tmp_path / "cumulative.py"
    model.write_text(
        "import torch\nfrom torch._higher_order_ops.associative_scan import associative_scan\n\n\n"
        "class Cumulative(torch.nn.Module):\n    def forward(self, xs):\n"
        "        return associative_scan(lambda a, b: a + b, xs, dim=0, combine_mode='pointwise')\n\n\n"
        "def make():\n    return Cumulative(), (torch.randn(8, 16),)\n")
    run = record_factory(f"{model}:make", RecordOptions(device="virtual-cuda", workspace=tmp_path))
    [kernel] = [kernel for graph in run.graphs for kernel in graph.kernels if kernel.kind == "triton"]
    assert "tl.associative_scan(" in kernel.source
    with pytest.raises(TargetError, match=r"cumulative\.py:7: .*combine_mode='pointwise'.*cpu-triton .*captures "
                                          r"on CPU tensors.*--target virtual-cuda.*combine_mode='generic'"):
        record_factory(f"{model}:make", RecordOptions(device="cpu-triton", workspace=tmp_path))
