"""Distributed jobs: ranks, per-rank stores and `merge`, collectives traced to the model
line and layer, DDP's graph splits, passes that move or fuse collectives; real recordings
on torch's fake process group (8-way tensor parallel in one process), a real 2-rank gloo
job under torchrun, and torchtitan's debug Llama."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from conftest import REPO
from synthetic_runs import FC2_LINE, MLP_PATH, STYLE, make_mlp_run, rank_run, workspace  # noqa: F401 - fixture
from synthetic_runs import RANK_FW_WRAPPER as FW_WRAPPER

from kernelscope.errors import UserError
from kernelscope.run_record import Collective
from kernelscope.store import StoreBackend

EXAMPLES = REPO / "examples" / "distributed"


def collectives_at(store, path, line):
    """What the CLI asks the read model: the collectives at FILE:LINE of the run that has it."""
    location = store.locate(path)
    return store.run(location.run_id).collectives_at(location, line)


def line_of(path: Path, needle: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# -- synthetic ranks: the store, merge, show, query, diff ------------------------------------


def run_of_rank(workspace: Path, rank: int, edit=None):
    run = rank_run(workspace, rank)
    if edit is not None:
        edit(rank, run)
    return run


def write_rank_stores(workspace: Path, ranks=(0, 1), edit=None) -> list[Path]:
    roots = []
    for rank in ranks:
        run = run_of_rank(workspace, rank, edit)
        root = workspace / ".kernelscope" / f"rank-{rank}"
        with StoreBackend(root) as store:
            store.write_run(run)
        roots.append(root)
    return roots


def cli(*args, cwd: Path):
    from kernelscope.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()
    finally:
        os.chdir(old)


def test_merge_brings_rank_stores_together_with_new_ids_files_and_profiles(workspace):
    from kernelscope.store.parts.profiles import ProfileRecord

    roots = write_rank_stores(workspace)
    with StoreBackend(roots[1]) as store:  # a table created on first use travels too, its kernel ids renumbered
        kernel_id = store.conn.execute("SELECT id FROM kernels WHERE name = 'triton_poi_fused_gelu_0'").fetchone()[0]
        store.attach_profile(1, ProfileRecord(source="profile TRACE", trace_name="t.json", device_name="H100",
                                              steps=1, step_markers=True, step_time_us=100.0, device_total_us=40.0,
                                              kernel_times={kernel_id: (40.0, 1)}, in_graphs_other={}, outside={},
                                              graph_calls={}))
    with StoreBackend(workspace / ".kernelscope") as main:
        main.write_run(make_mlp_run(workspace, created=5.0))  # a run already here: merged ids come after it
        results = [main.merge_from(root) for root in roots]
        assert [result.merged for result in results] == [[(1, 2)], [(1, 3)]]
        assert {run_id: rank.rank for run_id, rank in main.ranks_of_runs([1, 2, 3]).items()} == {2: 0, 3: 1}
        # every row of run 3 is its own: graphs, nodes, lines, collectives, splits point into run 3
        for table in ("graphs", "nodes", "kernels", "generated_lines", "collectives", "graph_splits", "graph_code"):
            runs = {row[0] for row in main.conn.execute(f"SELECT DISTINCT run_id FROM {table}")}
            assert runs <= {1, 2, 3} and (table in ("collectives", "graph_splits") or 1 in runs), table
        paths = [row[0] for row in main.conn.execute("SELECT path FROM files WHERE run_id = 3 AND kind != 'source'")]
        assert paths and all(path.startswith("runs/3/") and (main.root / path).is_file() for path in paths)
        assert main.conn.execute("SELECT COUNT(*) FROM generated_lines WHERE run_id = 3 AND file LIKE 'runs/1/%'"
                                 ).fetchone()[0] == 0
        profile = main.device_times(3)
        assert profile is not None and (
            [kernel.name for kernel in profile.kernels.values()] == ["triton_poi_fused_gelu_0"])
        answer = collectives_at(main, FW_WRAPPER.format(run=3), 13)
        assert [(c.op, c.module, c.issued_by, c.model_line.line) for c in answer] == \
            [("all_reduce", "fc2", "RowwiseParallel output", FC2_LINE)]
        again = main.merge_from(roots[0])
        assert again.merged == [] and again.skipped == [(1, "already here as run 2")]
    with StoreBackend(roots[0]) as source:  # the sources are left as they were
        assert [run.id for run in source.runs()] == [1]


def test_merge_refuses_what_is_not_a_store_and_the_store_itself(workspace):
    with StoreBackend(workspace / ".kernelscope") as main:
        with pytest.raises(UserError, match="no kernelscope store there"):
            main.merge_from(workspace / "nowhere")
        with pytest.raises(UserError, match="is the store being merged into"):
            main.merge_from(workspace / ".kernelscope")


def test_cli_merge_show_runs_and_diff_between_ranks(workspace):
    # rank 1 compiled the same code for its own GPU, as two H200s showed: Inductor's cache
    # directory, the GPU index (streams, device properties, `cuda:1` in the kernels' node
    # comments) and so the kernel file's name (a hash of a source holding that index)
    # differ; rank 2 compiled other code
    def edit(rank, run):
        forward = run.graphs[0]
        gpu = min(rank, 1)
        forward.wrapper_text = forward.wrapper_text.replace(
            "from torch._inductor.runtime import triton_helpers\n",
            f"from torch._inductor.runtime import triton_helpers\n# kernel path: /tmp/tmp{rank}x/ab/cab{gpu}c.py\n"
            f"#   %mm : Tensor \"f32[8, 16][16, 1]cuda:{gpu}\" = PlaceHolder[target=mm]\n"
            f"# triton_meta={{'device': DeviceProperties(type='cuda', index={gpu}, cc=90)}}\n", 1
        ).replace("stream=stream0", f"stream=stream{gpu}")
        if rank == 2:
            forward.wrapper_text += "# something else\n"

    write_rank_stores(workspace, ranks=(0, 1, 2), edit=edit)
    code, out, err = cli("merge", cwd=workspace)
    assert code == 0 and "3 run(s) merged into .kernelscope" in out, err
    code, out, _ = cli("runs", cwd=workspace)
    assert code == 0 and out.splitlines()[0].split()[3] == "rank" and " 1/2 " in out.splitlines()[2]
    code, out, _ = cli("show", "1", cwd=workspace)
    assert "rank 0 of 2 (gloo) · job torchrun:abc" in out
    assert "code differs across ranks: 2 groups" in out and "ranks 0, 1: identical" in out
    assert "ranks 2: differ in 0_0_0-forward (kernelscope diff 1 3)" in out
    last = len(run_of_rank(workspace, 0, edit).graphs[0].wrapper_text.splitlines()) + 1
    assert f"0_0_0-forward first differs at wrapper line {last}: rank 0 (no line) · rank 2 `# something else`" in out
    assert "[0/0 backward] DDPOptimizer part 2 of 2: bucket 8.1 KiB (cap 1 MiB): fc2.weight, fc2.bias" in out
    assert "order in runs/1/graphs/0_0_0-forward/wrapper.py: 2 compute -> all_reduce" in out
    code, out, _ = cli("show", "1", "--json", cwd=workspace)
    data = json.loads(out)["distributed"]
    assert data["rank"]["rank"] == 0 and [group["ranks"] for group in data["code_groups"]] == [[0, 1], [2]]
    assert [(d["graph_key"], d["line"], d["text"]) for d in data["code_groups"][1]["first_differences"]] == \
        [("0_0_0-forward", last, "# something else")]
    code, out, err = cli("diff", "rank0", "rank1", cwd=workspace)
    assert code == 0 and out.startswith("kernelscope diff: run 1 -> run 2"), err
    code, _, err = cli("diff", "rank0", "rank7", cwd=workspace)
    assert code == 5 and "rank7: no run of rank 7" in err


def test_query_a_collective_wrapper_line_names_the_model_line_and_layer(workspace):
    write_rank_stores(workspace, ranks=(0,))
    assert cli("merge", cwd=workspace)[0] == 0
    code, out, _ = cli("query", f".kernelscope/{FW_WRAPPER.format(run=1)}:13", cwd=workspace)
    assert code == 0
    assert "issue all_reduce (sum) group 0 over 2 ranks in [0/0 forward], 1 KiB" in out
    assert f"model line: {MLP_PATH}:{FC2_LINE} in forward  | return self.fc2(h)" in out
    assert "layer: fc2 (Linear)" in out
    assert f"issued by: RowwiseParallel output at {STYLE}:298 in _prepare_output_fn" in out
    assert "placements: P(sum) -> R" in out
    code, out, _ = cli("query", f"{MLP_PATH}:{FC2_LINE}", "--json", cwd=workspace)  # from the model line too
    assert [c["op"] for c in json.loads(out)["collectives"]] == ["all_reduce"]
    code, out, _ = cli("query", f"{MLP_PATH}:12", "--json", cwd=workspace)  # a line without one: no key
    assert "collectives" not in json.loads(out)


def test_dump_carries_rank_collectives_and_split_but_not_the_job(workspace):
    from kernelscope.store import validate_dump

    with StoreBackend(workspace / ".kernelscope") as store:
        run_id = store.write_run(rank_run(workspace, 1, job="torchrun:uuid-that-differs"))
        data = store.dump(run_id)
    validate_dump(data)
    assert data["run"]["rank"] == {"rank": 1, "world_size": 2, "backend": "gloo", "local_rank": 1}
    forward = next(graph for graph in data["run"]["graphs"] if graph["kind"] == "forward")
    assert forward["collectives"][0]["frame"]["file"] == STYLE
    assert forward["collectives"][0]["model_line"]["file"] == MLP_PATH
    assert "uuid-that-differs" not in json.dumps(data)


def test_rank_store_under_torchrun_and_fake_job_options(tmp_path, monkeypatch):
    from kernelscope.cli.distributed_args import record_options, store_for_rank

    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    args = Namespace(store=str(tmp_path / ".ks"), world_size=None, rank=0, job=None)
    assert store_for_rank(args) is None and args.store == str(tmp_path / ".ks")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert store_for_rank(args) == (1, 2) and args.store == str(tmp_path / ".ks" / "rank-1")
    with pytest.raises(UserError, match="drop --world-size"):
        store_for_rank(Namespace(store="x", world_size=8, rank=0, job=None))
    with pytest.raises(UserError, match="--rank 8 is not a rank of --world-size 8"):
        record_options(Namespace(world_size=8, rank=8, job=None))
    with pytest.raises(UserError, match="--rank needs --world-size"):
        record_options(Namespace(world_size=None, rank=3, job=None))


# -- engine pieces without a compile --------------------------------------------------------------


def test_moves_count_only_ops_present_before_and_after():
    import torch
    import torch.fx

    from kernelscope.engine.distributed_probes import _moved, _order

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.ops.aten.relu.default, (x,))
    b = graph.call_function(torch.ops.aten.neg.default, (x,))
    c = graph.call_function(torch.ops.aten.exp.default, (x,))
    reduce = graph.call_function(torch.ops._c10d_functional.all_reduce.default, (a, "sum", "0"))
    wait = graph.call_function(torch.ops._c10d_functional.wait_tensor.default, (reduce,))
    graph.output((wait, b, c))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    before = _order(gm)
    b.prepend(reduce)  # the all-reduce is issued before b and c: earlier past two ops
    b.prepend(graph.call_function(torch.ops.aten.abs.default, (x,)))  # a new op is not "passed"
    assert _moved(before, _order(gm)) == [(reduce.name, "earlier", 2)]
    assert _order(torch.fx.symbolic_trace(torch.nn.ReLU())) is None  # no collective: nothing to watch


def test_scheduler_moves_compare_wrapper_order_with_graph_order():
    import torch
    import torch.fx

    from kernelscope.engine.collectives import scheduler_moves

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.ops.aten.relu.default, (x,))
    reduce = graph.call_function(torch.ops._c10d_functional.all_reduce.default, (a, "sum", "0"))
    b = graph.call_function(torch.ops.aten.neg.default, (x,))
    graph.output((reduce, b))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    in_graph_order = [(10, [], [a.name]), (20, [], [reduce.name]), (30, [], [b.name])]
    assert scheduler_moves(gm, in_graph_order) == {}
    sunk = [(10, [], [a.name]), (20, [], [b.name]), (30, [], [reduce.name])]
    assert scheduler_moves(gm, sunk) == {reduce.name: ("later", 1)}


def test_module_paths_through_a_replaced_forward_and_ddp_parameter_names():
    from kernelscope.engine.distributed_probes import _parameter_path
    from kernelscope.engine.fx_nodes import module_instance

    wrapped = "L['self'].attention.forward.__closure__[0].cell_contents.__self__.wo"
    assert module_instance({"wo": (wrapped, "torch.nn.modules.linear.Linear")})[0] == "attention.wo"
    assert module_instance({"l": ("L['self'].layers[0].wq", "x.Linear")})[0] == "layers.0.wq"
    assert _parameter_path("L_self_modules_layers_modules_0_parameters_weight_") == "layers.0.weight"
    assert _parameter_path("L_self_modules_attn_proj_parameters_bias_") == "attn_proj.bias"


# -- real recordings ---------------------------------------------------------------------------


def record(factory: str, world_size: int, train: bool = False):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    return record_factory(f"{EXAMPLES / factory}", RecordOptions(device="virtual-cuda", train=train,
                                                                 workspace=REPO, world_size=world_size))


@pytest.fixture(scope="module")
def tp8(recordings):
    """The Llama TP block, trained, as rank 0 of an 8-way job on torch's fake process group
    (recorded once per session: the front ends' tests read it too)."""
    return recordings.get_distributed("llama_tp.py:make", world_size=8, train=True)


def issued(graph) -> list[Collective]:
    return [collective for collective in graph.collectives if collective.role != "wait"]


@pytest.mark.slow
def test_fake_8_rank_tensor_parallel_block_collectives_answer_model_line_and_layer(tp8, tmp_path):
    source = EXAMPLES / "llama_tp.py"
    attention_call = line_of(source, "h = x + self.attention(self.attention_norm(x))")
    ffn_call = line_of(source, "return h + self.feed_forward(self.ffn_norm(h))")
    wo_call = line_of(source, "return self.wo(")
    w2_call = line_of(source, "return self.w2(")
    assert tp8.rank.rank == 0 and tp8.rank.world_size == 8 and tp8.rank.backend == "fake"
    forward, backward = tp8.graphs
    found = [(c.op, c.group_size, c.issued_by, c.redistribute, c.model_line.line,
              next(n.module_path for n in forward.post_grad_nodes if n.name == c.node)) for c in issued(forward)]
    assert found == [
        ("all_gather_into_tensor", 8, "PrepareModuleInput input", "S(1) -> R", attention_call, "attention"),
        ("reduce_scatter_tensor", 8, "RowwiseParallel output", "P(sum) -> S(1)", wo_call, "attention.wo"),
        ("all_gather_into_tensor", 8, "PrepareModuleInput input", "S(1) -> R", ffn_call, "feed_forward"),
        ("reduce_scatter_tensor", 8, "RowwiseParallel output", "P(sum) -> S(1)", w2_call, "feed_forward.w2"),
    ]
    waits = [c for c in forward.collectives if c.role == "wait"]
    assert [wait.peers for wait in waits] == [[c.node] for c in issued(forward)]
    assert all(c.frame.file == STYLE for c in forward.collectives)
    assert [c.issued_by for c in issued(backward)] == [
        "gradient of RowwiseParallel output", "gradient of PrepareModuleInput input"] * 2
    # each collective's wrapper call computes that node, not the wait that returns its buffer
    calls = {kernel.name: kernel.nodes for kernel in forward.kernels if "_c10d_functional" in kernel.name}
    assert sorted(node for nodes in calls.values() for node in nodes) == sorted(c.node for c in forward.collectives)
    assert all(len(nodes) == 1 for nodes in calls.values())

    with StoreBackend(tmp_path / "ks") as store:
        run_id = store.write_run(tp8)
        view = store.run(run_id).distributed()
        graph = view.graphs[0]
        line = graph.collectives[0].wrapper_lines[0]
        answer = collectives_at(store, graph.wrapper_file, line)
    assert [(c.op, c.module, c.module_class.rsplit(".", 1)[-1], c.model_line.line) for c in answer] == \
        [("all_gather_into_tensor", "attention", "Attention", attention_call)]
    assert [step.kind for step in graph.order if step.kind != "compute"] == ["issue", "wait"] * 4
    assert set(graph.overlap) == {c.node for c in issued(forward)}


@pytest.mark.slow
def test_async_tp_fusion_is_named_in_the_pass_lineage():
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"_micro_pipeline_tp": False}):  # the factory turns it on, as torchtitan does
        run = record("llama_tp.py:make_async_tp", world_size=8)
    graph = run.graphs[0]
    fused = [c for c in graph.collectives if c.role == "fused"]
    assert {c.op for c in fused} == {"fused_all_gather_matmul", "fused_matmul_reduce_scatter"}
    for collective in fused:
        node = next(node for node in graph.post_grad_nodes if node.name == collective.node)
        assert "micro_pipeline_tp_pass" in [step.pass_name for step in node.lineage], node.lineage
        assert node.module_path and collective.model_line is not None


@pytest.mark.slow
def test_reordering_for_overlap_is_named_in_the_pass_lineage():
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"reorder_for_compute_comm_overlap": True,
                                "reorder_for_compute_comm_overlap_passes": ["sink_waits", "raise_comms"]}):
        run = record("llama_tp.py:make", world_size=8, train=True)
    backward = run.graphs[1]
    moved = {node.name: node.lineage[0] for node in backward.post_grad_nodes
             if node.lineage and node.lineage[0].action.startswith("moved")}
    assert moved and set(moved) <= {c.node for c in backward.collectives}
    assert {step.pass_name for step in moved.values()} == \
        {"Inductor scheduler (reorder_for_compute_comm_overlap: sink_waits, raise_comms)"}


@pytest.mark.slow
def test_ddp_splits_are_marked_with_their_bucket(tmp_path, run_cli):
    run = record("ddp_train.py:make", world_size=2, train=True)
    assert [graph.key for graph in run.graphs] == [f"4_0_0-{kind}-part{part}" for part in range(4)
                                                   for kind in ("forward", "backward")]
    assert [(graph.split.part, graph.split.parts, graph.split.params, graph.split.splitter)
            for graph in run.graphs[::2]] == [
        (part, 4, [f"layers.{part}.weight", f"layers.{part}.bias"], "DDPOptimizer") for part in range(4)]
    assert all(graph.split.cap_bytes == 1 << 20 for graph in run.graphs)
    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(run)
    result = run_cli(["show", "--store", str(tmp_path / ".kernelscope")])
    assert "[4/0 backward] DDPOptimizer part 4 of 4: bucket 1 MiB (cap 1 MiB): layers.3.weight" in result.stdout


@pytest.mark.slow
def test_two_gloo_ranks_under_torchrun_record_merge_and_compare(gloo_ranks, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    store = tmp_path / ".kernelscope"
    for rank in (0, 1):  # the job's rank stores (shared with the front ends' tests), where merge looks for them
        assert (gloo_ranks / f"rank-{rank}" / "kernelscope.sqlite").exists()
        shutil.copytree(gloo_ranks / f"rank-{rank}", store / f"rank-{rank}")

    def kernelscope(*args):
        done = subprocess.run([sys.executable, "-m", "kernelscope", *args, "--store", str(store)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "2 run(s) merged" in kernelscope("merge")
    shown = kernelscope("show", "2")
    assert "rank 1 of 2 (gloo)" in shown and "identical code on ranks 0, 1" in shown
    assert "over 2 ranks" in shown
    assert "no differences" in kernelscope("diff", "rank0", "rank1")
    with StoreBackend(store) as merged:
        graph = merged.run(1).distributed().graphs[0]
        wrapper, line = graph.wrapper_file, graph.collectives[0].wrapper_lines[0]
    answer = kernelscope("query", f"{wrapper}:{line}")
    attention_call = line_of(EXAMPLES / "llama_tp.py", "h = x + self.attention(self.attention_norm(x))")
    assert f"llama_tp.py:{attention_call} in forward" in answer and "layer: attention (Attention)" in answer


@pytest.mark.slow
def test_torchtitan_debug_llama_tensor_parallel_recorded_and_queried(tmp_path):
    pytest.importorskip("torchtitan", reason="pip install --no-deps -r requirements-torchtitan.txt")
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    store = tmp_path / ".kernelscope"

    def kernelscope(*args):
        done = subprocess.run([sys.executable, "-m", "kernelscope", *args, "--store", str(store)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    kernelscope("run", str(EXAMPLES / "torchtitan_llama.py"), "--world-size", "2", "--json")
    with StoreBackend(store) as recorded:
        view = recorded.run(1).distributed()
        block = next(graph for graph in view.graphs if len([c for c in graph.collectives if c.role == "issue"]) == 4)
        first = next(c for c in block.collectives if c.role == "issue")
    assert (first.op, first.module, first.redistribute) == ("all_gather_into_tensor", "attention", "S(1) -> R")
    assert first.issued_by == "DTensor.redistribute in _redistribute_inputs"
    assert first.model_line.file.endswith("torchtitan/models/llama3/model.py")
    answer = kernelscope("query", f"{block.wrapper_file}:{first.wrapper_lines[0]}")
    assert "torchtitan/models/llama3/model.py" in answer and "h = x + self.attention(" in answer
    assert "layer: attention (GQAttention)" in answer
