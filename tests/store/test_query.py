"""Queries both ways through the chain, locating files by any spelling, and index use."""
from __future__ import annotations

import time

import pytest
from synthetic_runs import (  # noqa: F401  (fixtures)
    FC1_LINE,
    FC2_LINE,
    GELU_LINE,
    LIBRARY_FILE,
    LIBRARY_LINE,
    MAKE_LINE,
    make_big_run,
    make_mlp_run,
    mlp_store,
    workspace,
)

from kernelscope.errors import StoreError, UserError
from kernelscope.store import StoreBackend

FW = "runs/1/graphs/0_0_0-forward"
BW = "runs/1/graphs/0_0_0-backward"
FW_KERNEL = f"{FW}/kernels/triton_poi_fused_gelu_0.py"
BW_KERNEL = f"{BW}/kernels/triton_poi_fused_gelu_gelu_backward_0.py"


def chain_of(result, kind):
    [chain] = [chain for chain in result.graphs if chain.graph.kind == kind]
    return chain


def names(nodes):
    return [node.name for node in nodes]


# -- down from a source line ------------------------------------------------------------


def test_down_from_gelu_line_reaches_both_graphs_kernels_and_wrapper(mlp_store):
    result = mlp_store.query("examples/mlp.py", GELU_LINE, direction="down")
    assert result.text == "        h = torch.nn.functional.gelu(h)"
    assert [(c.graph.compile_id, c.graph.kind) for c in result.graphs] == [("0/0", "forward"), ("0/0", "backward")]

    forward = chain_of(result, "forward")
    assert [(n.name, n.reason, n.graph_file, n.graph_line) for n in forward.pre_nodes] == [
        ("h_1", "stack_trace", f"{FW}/pre_grad.py", 5)]
    assert [(n.name, n.reason) for n in forward.post_nodes] == [
        (name, "stack_trace; from pre-grad h_1") for name in ["mul", "mul_1", "erf", "add", "mul_2"]]
    [kernel] = forward.kernels
    assert (kernel.name, kernel.kind, kernel.file, kernel.reason) == (
        "triton_poi_fused_gelu_0", "triton", FW_KERNEL, "fused into triton kernel")
    assert kernel.nodes == ["add", "erf", "mul", "mul_1", "mul_2"]
    assert [(line.file, line.line, line.reason, line.nodes) for line in kernel.lines] == [
        (FW_KERNEL, 12, "loads for", ["mul", "mul_1"]),
        (FW_KERNEL, 14, "computes", ["mul"]),
        (FW_KERNEL, 16, "computes", ["mul_1"]),
        (FW_KERNEL, 17, "computes", ["erf"]),
        (FW_KERNEL, 19, "computes", ["add"]),
        (FW_KERNEL, 20, "computes", ["mul_2"]),
        (FW_KERNEL, 21, "stores", ["mul_2"]),
    ]
    assert kernel.lines[3].text == "    tmp5 = libdevice.erf(tmp4)"
    assert [(call.file, call.line, call.reason, call.text) for call in kernel.calls] == [
        (f"{FW}/wrapper.py", 11, "launches kernel", "    triton_poi_fused_gelu_0.run(buf0, buf1, 512, stream=stream0)")]
    assert [(line.line, line.reason, line.nodes) for line in forward.wrapper_lines] == [
        (10, "allocates for", ["mul_2"]),
        (11, "launches kernel", ["add", "erf", "mul", "mul_1", "mul_2"]),
    ]
    assert forward.sources == []  # direction="down"

    backward = chain_of(result, "backward")
    assert backward.pre_nodes == []
    assert [(n.name, n.reason) for n in backward.post_nodes] == [
        (name, "forward seq_nr; from pre-grad h_1") for name in ["mul_3", "erf_1", "add_1", "mul_5"]]
    [bw_kernel] = backward.kernels
    assert bw_kernel.name == "triton_poi_fused_gelu_gelu_backward_0"
    assert [line.line for line in bw_kernel.lines] == [10, 11, 13, 14, 16, 19, 20]  # not 18: mul_4 has no source
    assert [(line.line, line.reason) for line in backward.wrapper_lines] == [
        (7, "reuses buffer for"), (8, "launches kernel")]


def test_down_from_linear_line_reaches_extern_kernel_and_library_node(mlp_store):
    result = mlp_store.query("examples/mlp.py", FC1_LINE)
    forward = chain_of(result, "forward")
    assert [(n.name, n.reason) for n in forward.post_nodes] == [
        ("permute", "from pre-grad linear"), ("addmm", "stack_trace; from pre-grad linear")]
    assert forward.post_nodes[0].source.file == LIBRARY_FILE
    [kernel] = forward.kernels
    assert (kernel.name, kernel.kind, kernel.file, kernel.reason, kernel.nodes, kernel.lines) == (
        "extern_kernels.addmm", "extern", None, "calls extern kernel", ["addmm", "permute"], [])
    assert [(call.line, call.reason) for call in kernel.calls] == [(8, "calls extern kernel")]
    assert [(line.line, line.reason, line.nodes) for line in forward.wrapper_lines] == [
        (7, "allocates for", ["addmm"]), (8, "calls extern kernel", ["addmm", "permute"]),
        (9, "frees after", ["addmm"])]
    assert [(s.file, s.line, s.nodes) for s in forward.sources] == [
        (LIBRARY_FILE, LIBRARY_LINE, ["permute"]), ("examples/mlp.py", FC1_LINE, ["linear", "addmm"])]
    assert len(result.graphs) == 1  # fc1's weight gradient is not in this synthetic backward


def test_source_line_outside_the_workspace_is_queried_by_absolute_path(mlp_store):
    result = mlp_store.query(LIBRARY_FILE, LIBRARY_LINE)
    assert result.location.kind == "source" and result.location.path == LIBRARY_FILE
    assert result.text == ""  # the library file is not on this machine
    assert names(chain_of(result, "forward").post_nodes) == ["permute"]
    assert [k.name for k in chain_of(result, "forward").kernels] == ["extern_kernels.addmm"]


def test_source_line_with_nothing_recorded_is_empty(mlp_store):
    result = mlp_store.query("examples/mlp.py", 2)
    assert result.empty and result.graphs == []
    assert result.text == "from torch import nn"


# -- up from generated lines ---------------------------------------------------------------


def test_up_from_kernel_line(mlp_store):
    result = mlp_store.query(f".kernelscope/{FW_KERNEL}", 12, direction="up")
    assert result.text == "    tmp0 = tl.load(in_ptr0 + (x0), xmask)"
    assert [(o.line, o.reason, o.nodes, o.kernel) for o in result.origins] == [
        (12, "loads for", ["mul", "mul_1"], "triton_poi_fused_gelu_0")]
    [forward] = result.graphs
    assert [(n.stage, n.name, n.reason) for n in forward.post_nodes] == [
        ("post", "mul", "loads for"), ("post", "mul_1", "loads for")]
    assert [(n.name, n.reason) for n in forward.pre_nodes] == [("h_1", "became post-grad mul; became post-grad mul_1")]
    assert [(s.file, s.line, s.function, s.code, s.nodes, s.reason) for s in forward.sources] == [
        ("examples/mlp.py", GELU_LINE, "forward", "h = torch.nn.functional.gelu(h)", ["h_1", "mul", "mul_1"],
         "stack_trace")]
    assert forward.kernels == [] and forward.wrapper_lines == []


def test_up_from_backward_kernel_line_of_a_node_without_source(mlp_store):
    result = mlp_store.query(f".kernelscope/{BW_KERNEL}", 18)
    [backward] = result.graphs
    assert [(n.name, n.source) for n in backward.post_nodes] == [("mul_4", None)]
    assert backward.pre_nodes == [] and backward.sources == []


def test_unmapped_kernel_line_has_its_origin_but_no_nodes(mlp_store):
    result = mlp_store.query(f".kernelscope/{FW_KERNEL}", 8)
    assert [(o.reason, o.nodes) for o in result.origins] == [("indexing", [])]
    assert result.graphs == [] and result.empty


def test_wrapper_launch_line_goes_up_to_nodes_and_down_to_the_kernel(mlp_store):
    result = mlp_store.query(f".kernelscope/{BW}/wrapper.py", 8)
    assert result.location.kind == "wrapper" and result.location.graph.kind == "backward"
    forward, backward = result.graphs  # h_1, the pre-grad node, is in the forward graph's Dynamo graph
    assert names(forward.pre_nodes) == ["h_1"]
    assert [(n.name, n.reason) for n in backward.post_nodes] == [
        (name, "launches kernel") for name in ["mul_3", "erf_1", "add_1", "mul_4", "mul_5"]]
    assert [(k.name, k.reason, k.file) for k in backward.kernels] == [
        ("triton_poi_fused_gelu_gelu_backward_0", "launched here", BW_KERNEL)]
    assert [(s.file, s.line, s.reason) for s in backward.sources] == [("examples/mlp.py", GELU_LINE, "forward seq_nr")]


# -- from graph files ----------------------------------------------------------------------


def test_post_grad_line_finds_its_node_up_and_down(mlp_store):
    result = mlp_store.query(f".kernelscope/{FW}/post_grad.py", 4)
    [forward] = result.graphs
    assert [(n.name, n.target, n.reason) for n in forward.post_nodes] == [
        ("addmm", "aten.addmm.default", "defined at this line")]
    assert [(n.name, n.reason) for n in forward.pre_nodes] == [("linear", "became post-grad addmm")]
    assert [(s.file, s.line) for s in forward.sources] == [("examples/mlp.py", FC1_LINE)]
    assert [(k.name, k.nodes) for k in forward.kernels] == [("extern_kernels.addmm", ["addmm"])]
    assert [line.line for line in forward.wrapper_lines] == [7, 8, 9]


def test_pre_grad_line_finds_post_grad_nodes_in_both_graphs(mlp_store):
    result = mlp_store.query(f".kernelscope/{FW}/pre_grad.py", 6, direction="down")
    forward, backward = result.graphs
    assert [(n.name, n.reason) for n in forward.pre_nodes] == [("linear_1", "defined at this line")]
    assert [(n.name, n.reason) for n in forward.post_nodes] == [
        ("permute_1", "from pre-grad linear_1"), ("addmm_1", "from pre-grad linear_1")]
    assert names(backward.post_nodes) == ["permute_2", "mm"]
    assert [k.name for k in backward.kernels] == ["extern_kernels.mm"]
    assert forward.sources == []


def test_direction_filters_up_and_down(mlp_store):
    up = mlp_store.query("examples/mlp.py", FC2_LINE, direction="up")
    assert all(chain.kernels == [] and chain.wrapper_lines == [] for chain in up.graphs)
    assert all(chain.sources for chain in up.graphs)
    both = mlp_store.query("examples/mlp.py", FC2_LINE)
    assert all(chain.kernels and chain.sources for chain in both.graphs)
    with pytest.raises(UserError, match="direction must be one of up, down, both"):
        mlp_store.query("examples/mlp.py", FC2_LINE, direction="sideways")


def test_line_out_of_range(mlp_store):
    with pytest.raises(UserError, match=r"line 19 is out of range for examples/mlp.py: give a line 1-18"):
        mlp_store.query("examples/mlp.py", 19)
    with pytest.raises(UserError,
                       match=r"line 22 is out of range for runs/1/.*triton_poi_fused_gelu_0.py: give a line 1-21"):
        mlp_store.query(f".kernelscope/{FW_KERNEL}", 22)
    with pytest.raises(UserError, match="line 0 is out of range"):
        mlp_store.query("examples/mlp.py", 0)


# -- locate ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", [
    "examples/mlp.py", "./examples/mlp.py", "examples/../examples/mlp.py", "{ws}/examples/mlp.py",
])
def test_locate_source_file_by_any_spelling(mlp_store, workspace, spelling):
    location = mlp_store.locate(spelling.format(ws=workspace))
    assert (location.path, location.kind, location.run_id) == ("examples/mlp.py", "source", 1)
    assert location.absolute_path == str(workspace / "examples/mlp.py")
    assert location.graph is None and location.kernel is None


def test_locate_from_another_directory(mlp_store, workspace, monkeypatch):
    (workspace / "sub").mkdir()
    monkeypatch.chdir(workspace / "sub")
    assert mlp_store.locate("../examples/mlp.py").path == "examples/mlp.py"
    monkeypatch.chdir(workspace.parent)
    assert mlp_store.locate("ws/examples/mlp.py").path == "examples/mlp.py"
    assert mlp_store.locate("examples/mlp.py").path == "examples/mlp.py"  # not here: taken as workspace-relative
    assert mlp_store.locate(f"ws/.kernelscope/{FW_KERNEL}").path == FW_KERNEL


@pytest.mark.parametrize("spelling", [
    ".kernelscope/" + FW_KERNEL, "{ws}/.kernelscope/" + FW_KERNEL, FW_KERNEL, "elsewhere/.kernelscope/" + FW_KERNEL,
])
def test_locate_kernel_file_by_any_spelling(mlp_store, workspace, spelling):
    location = mlp_store.locate(spelling.format(ws=workspace))
    assert (location.path, location.kind, location.run_id, location.kernel, location.line_count) == (
        FW_KERNEL, "kernel", 1, "triton_poi_fused_gelu_0", 21)
    assert (location.graph.key, location.graph.compile_id, location.graph.kind) == ("0_0_0-forward", "0/0", "forward")
    assert location.absolute_path == str(workspace / ".kernelscope" / FW_KERNEL)


@pytest.mark.parametrize("name, kind", [("wrapper.py", "wrapper"), ("pre_grad.py", "pre_grad"),
                                        ("post_grad.py", "post_grad")])
def test_locate_graph_files(mlp_store, name, kind):
    location = mlp_store.locate(f".kernelscope/{FW}/{name}")
    assert (location.kind, location.graph.key, location.kernel) == (kind, "0_0_0-forward", None)


def test_locate_defaults_to_the_latest_run_that_has_the_file(mlp_store, workspace):
    assert mlp_store.write_run(make_mlp_run(workspace)) == 2
    assert mlp_store.locate("examples/mlp.py").run_id == 2
    assert mlp_store.locate("examples/mlp.py", run_id=1).run_id == 1
    assert mlp_store.locate(f".kernelscope/{FW_KERNEL}").run_id == 1  # a run's own file names its run
    assert mlp_store.query("examples/mlp.py", GELU_LINE, run_id=1).graphs[0].kernels[0].file == FW_KERNEL


def test_locate_errors_say_what_to_do(mlp_store, workspace):
    with pytest.raises(StoreError, match=r"no run has recorded examples/other.py — "
                                         r"run `kernelscope compile examples/other.py:FACTORY`"):
        mlp_store.locate("examples/other.py")
    with pytest.raises(StoreError, match="there is no run 7 in this store — `kernelscope runs` lists the runs"):
        mlp_store.locate("examples/mlp.py", run_id=7)
    with pytest.raises(StoreError, match=r"no run in this store generated runs/9/graphs/x/wrapper.py "
                                         r"\(was the run deleted\?\)"):
        mlp_store.locate(".kernelscope/runs/9/graphs/x/wrapper.py")
    other = make_mlp_run(workspace)
    other.target = "examples/other.py:make"
    other.graphs = []
    (workspace / "examples/other.py").write_text("x = 1\n")
    assert mlp_store.write_run(other) == 2
    with pytest.raises(StoreError, match="run 2 compiled examples/other.py:make "
                                         "but recorded no FX node from examples/other.py"):
        mlp_store.locate("examples/other.py")
    with pytest.raises(StoreError, match=r"run 2 has no record of runs/1/.*wrapper.py \(runs that have it: 1\)"):
        mlp_store.locate(f".kernelscope/{FW}/wrapper.py", run_id=2)


# -- lines_for_file ---------------------------------------------------------------------


def test_lines_for_source_file(mlp_store):
    links = mlp_store.lines_for_file("examples/mlp.py")
    assert [(line.line, line.graphs, sorted(line.kernels), line.reasons) for line in links.lines] == [
        (FC1_LINE, ["0/0 forward"], ["extern_kernels.addmm"], ["stack_trace"]),
        (GELU_LINE, ["0/0 forward", "0/0 backward"],
         ["triton_poi_fused_gelu_0", "triton_poi_fused_gelu_gelu_backward_0"], ["stack_trace", "forward seq_nr"]),
        (FC2_LINE, ["0/0 forward", "0/0 backward"], ["extern_kernels.addmm", "extern_kernels.mm"],
         ["stack_trace", "forward seq_nr"]),
        (MAKE_LINE, ["0/0 forward"], ["extern_kernels.addmm"], ["via call"]),  # an outer frame of fc1's op
    ]
    assert links.lines[1].nodes == ["h_1", "mul", "mul_1", "erf", "add", "mul_2", "mul_3", "erf_1", "add_1", "mul_5"]


def test_lines_for_kernel_wrapper_and_graph_files(mlp_store):
    kernel = mlp_store.lines_for_file(f".kernelscope/{FW_KERNEL}")
    assert [(line.line, line.nodes, line.reasons) for line in kernel.lines][:3] == [
        (8, [], ["indexing"]), (12, ["mul", "mul_1"], ["loads for"]), (14, ["mul"], ["computes"])]
    assert len(kernel.lines) == 8
    wrapper = mlp_store.lines_for_file(f".kernelscope/{FW}/wrapper.py")
    assert [(line.line, line.kernels) for line in wrapper.lines] == [
        (7, []), (8, ["extern_kernels.addmm"]), (9, []), (10, []), (11, ["triton_poi_fused_gelu_0"]), (12, []),
        (13, ["extern_kernels.addmm"])]
    post_grad = mlp_store.lines_for_file(f".kernelscope/{FW}/post_grad.py")
    assert [(line.line, line.nodes, line.kernels) for line in post_grad.lines if line.line in (2, 4, 7)] == [
        (2, ["primals_1", "primals_2", "primals_3", "primals_4", "primals_5"], []),
        (4, ["addmm"], ["extern_kernels.addmm"]),
        (7, ["erf"], ["triton_poi_fused_gelu_0"]),
    ]
    pre_grad = mlp_store.lines_for_file(f".kernelscope/{FW}/pre_grad.py")
    assert [(line.line, line.nodes, sorted(line.kernels)) for line in pre_grad.lines if line.line == 5] == [
        (5, ["h_1"], ["triton_poi_fused_gelu_0", "triton_poi_fused_gelu_gelu_backward_0"])]


# -- answered from indexes ---------------------------------------------------------------------

def test_queries_use_indexes_not_scans(workspace):
    """Every statement a lookup runs on a 2,000-kernel run is answered from an index."""
    store = StoreBackend(workspace / ".kernelscope")
    store.write_run(make_mlp_run(workspace))
    store.write_run(make_big_run(workspace, kernel_count=2000))
    kernel = ".kernelscope/runs/2/graphs/0_0_0-inference/kernels/triton_poi_fused_mul_1234.py"
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    started = time.perf_counter()
    down = store.query("examples/big.py", 1236)
    up = store.query(kernel, 4)
    store.query(".kernelscope/runs/2/graphs/0_0_0-inference/wrapper.py", 1235)
    store.query("examples/mlp.py", GELU_LINE)
    outer = store.query("examples/mlp.py", MAKE_LINE)  # an outer frame: via call
    store.query("examples/mlp.py", MAKE_LINE, detail=False, rollup=True)
    store.lines_for_file("examples/mlp.py")
    store.lines_for_file(kernel)
    store.lines_for_file(".kernelscope/runs/2/graphs/0_0_0-inference/wrapper.py")
    elapsed = time.perf_counter() - started
    store.conn.set_trace_callback(None)

    assert [k.name for k in down.graphs[0].kernels] == ["triton_poi_fused_mul_1234"]
    assert [(s.file, s.line) for s in up.graphs[0].sources] == [("examples/big.py", 1236)]
    assert [node.via for chain in outer.graphs for node in chain.post_nodes] == ["call"]
    assert len(statements) > 10
    scans = []
    for statement in statements:
        for row in store.conn.execute("EXPLAIN QUERY PLAN " + statement):
            detail = row[3]
            whole_table = detail.startswith("SCAN") and detail.split()[1] != "runs"  # runs: one row per run
            whole_run = "_by_run " in detail  # the run_id indexes serve deletes, not lookups
            if whole_table or whole_run:
                scans.append((detail, statement))
    assert scans == []
    print(f"9 lookups on a 2,000-kernel run: {elapsed * 1000:.1f} ms")
    store.close()
