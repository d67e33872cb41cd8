"""Memory from the compile alone (docs/memory.md): the allocation timeline read from a
wrapper, sized from Inductor's IR; the peak; what each forward saves for its backward, per
model line; stored, read back through RunView, dumped and printed by `kernelscope memory`."""
from __future__ import annotations

import json

import pytest

from kernelscope.compile_text.wrapper_memory import read_timeline
from kernelscope.render.text import format_bytes
from kernelscope.store import StoreBackend, validate_dump
from tests.conftest import EXAMPLES, example_line

# The call body of a real forward wrapper (examples/mlp.py, train), cut down.
WRAPPER = '''
class Runner:
    def call(self, args):
        primals_1, primals_2 = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            buf0 = empty_strided_cuda((16, 128), (128, 1), torch.float32)
            extern_kernels.mm(primals_2, primals_1, out=buf0)
            del primals_1
            buf1 = empty_strided_cuda((16, 1), (1, 16), torch.float32)
            buf2 = reinterpret_tensor(buf1, (16, 1), (1, 1), 0); del buf1  # reuse
            buf3 = empty_strided_cuda((16, 128), (128, 1), torch.float32)
            triton_per_fused_0.run(buf2, buf0, buf3, 16, 128, stream=raw_stream0)
            buf4 = reinterpret_tensor(buf3, (128, 16), (1, 128), 0)
            del buf0
            buf5 = empty_strided_cuda((16, 64), (64, 1), torch.float32)
            del buf3, buf4
        return (buf5, buf2, )
'''


def test_timeline_reads_allocations_reuses_views_and_frees():
    sizes = {"primals_1": 1000, "primals_2": 24, "buf0": 8192, "buf1": 64, "buf2": 64, "buf3": 8192,
             "buf4": 8192, "buf5": 4096}
    timeline = read_timeline(WRAPPER, sizes, ["primals_1", "primals_2"])
    steps = [(action, name, change, live) for _, action, name, change, live in timeline.events]
    assert steps == [
        ("allocate", "buf0", 8192, 1024 + 8192),
        ("allocate", "buf1", 64, 1024 + 8256),
        ("reuse", "buf2", 0, 1024 + 8256),  # buf2 takes buf1's storage: no new bytes
        ("allocate", "buf3", 8192, 1024 + 16448),
        # buf4 is a view of buf3: no bytes; `del primals_1` frees nothing (the caller holds inputs)
        ("free", "buf0", -8192, 1024 + 8256),
        ("allocate", "buf5", 4096, 1024 + 12352),
        ("free", "buf3", -8192, 1024 + 4160),  # freed when its last name (buf4) goes
    ]
    assert timeline.inputs_bytes == 1024
    assert (timeline.peak_bytes, timeline.peak_line) == (1024 + 16448, 12)
    assert WRAPPER.splitlines()[11].strip().startswith("buf3 = empty_strided_cuda")
    at_peak = {name for name, span in timeline.spans.items() if span.live_at_peak}
    assert at_peak == {"buf0", "buf2", "buf3"}
    assert timeline.spans["buf1"].reused_by == "buf2" and timeline.spans["buf1"].freed_line == 11
    assert timeline.spans["buf5"].freed_line == 0  # returned: live when the graph ends


# -- a real training recording --------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp_train(recordings, tmp_path_factory):
    record = recordings.get("mlp", train=True)
    store = StoreBackend(tmp_path_factory.mktemp("memory") / ".kernelscope", create=True)
    run_id = store.write_run(record)
    yield record, store, store.run(run_id)
    store.close()


@pytest.mark.slow
def test_sizes_come_from_the_ir_and_the_forward_saves_what_the_backward_takes(mlp_train):
    record, _, _ = mlp_train
    forward = next(graph for graph in record.graphs if graph.kind == "forward")
    backward = next(graph for graph in record.graphs if graph.kind == "backward")
    by_name = {buffer.name: buffer for buffer in forward.memory.buffers}
    # fc1's addmm: 16x128 float32, allocated on the line the wrapper allocates it
    first = next(b for b in forward.memory.buffers if b.node == "addmm")
    assert (first.bytes, first.dtype, first.shape) == (16 * 128 * 4, "torch.float32", "16x128")
    wrapper = forward.wrapper_text.splitlines()
    assert wrapper[first.allocated_line - 1].strip().startswith(f"{first.name} = empty_strided_cuda((16, 128)")
    # what the backward takes as saved inputs (not tangents, not primals) is what the forward marks saved
    saved_inputs = {b.name: b.bytes for b in backward.memory.buffers if b.kind == "input" and b.from_forward}
    assert saved_inputs and set(saved_inputs) <= {node.name for node in forward.post_grad_nodes}
    saved = [b for b in forward.memory.buffers if b.saved_for_backward and b.kind == "buffer"]
    assert sum(b.bytes for b in saved) == sum(saved_inputs.values())
    assert all(b.read_by for b in saved)  # each read by a backward kernel
    assert by_name["primals_3"].saved_for_backward  # the batch: an input the backward keeps
    # the peak is the inputs plus the most the timeline holds, reached at an allocation
    for graph in (forward, backward):
        memory = graph.memory
        assert memory.peak_bytes == max([memory.inputs_bytes] + [e.live_bytes for e in memory.timeline])
        assert any(e.line == memory.peak_line and e.action == "allocate" for e in memory.timeline)
    # GELU is recomputed in the backward instead of saved
    assert {"erf", "mul_1"} <= set(backward.memory.recomputed)


@pytest.mark.slow
def test_the_store_answers_per_model_line(mlp_train):
    record, store, run = mlp_train
    memory = run.memory()
    assert memory.peak_bytes == max(graph.memory.peak_bytes for graph in record.graphs)
    fc1 = example_line("mlp", "h = self.fc1(x)")
    lines = {(entry.line, entry.module): entry for entry in memory.lines}
    assert lines[(fc1, "fc1")].saved_for_backward_bytes == 16 * 128 * 4
    assert [b.node for b in lines[(fc1, "fc1")].saved] == ["addmm"]
    per_file = run.file_memory(str(EXAMPLES / "mlp.py"))
    assert per_file[fc1].saved_for_backward_bytes == 16 * 128 * 4
    total = sum(entry.saved_for_backward_bytes for entry in memory.lines)
    assert total == memory.saved_for_backward_bytes
    gelu = example_line("mlp", "F.gelu(h)")
    assert per_file[gelu].recomputed >= 1 and per_file[gelu].saved_for_backward_bytes == 0
    data = run.dump()
    validate_dump(data)
    dumped = data["run"]["memory"]
    assert dumped["peak_bytes"] == memory.peak_bytes
    assert {"file", "line", "module", "saved_for_backward_bytes", "live_at_peak_bytes"} <= set(dumped["lines"][0])
    assert all(graph["memory"]["timeline"] for graph in data["run"]["graphs"])


@pytest.mark.slow
def test_memory_command_prints_the_peak_and_json(mlp_train, run_cli):
    _, store, run = mlp_train
    result = run_cli(["memory", str(run.id), "--store", str(store.root), "--json"])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["peak_bytes"] == run.memory().peak_bytes
    assert {graph["kind"] for graph in data["graphs"]} == {"forward", "backward"}
    text = run_cli(["memory", "--store", str(store.root), "--timeline"])
    assert text.returncode == 0, text.stderr
    assert "saves 8.0 KiB for backward [addmm 16x128 float32]" in text.stdout
    assert "<- peak" in text.stdout


@pytest.mark.slow
def test_symbolic_sizes_are_evaluated_at_the_example_inputs(recordings):
    record = recordings.get("mlp", train=True, dynamic=True)
    forward = next(graph for graph in record.graphs if graph.kind == "forward")
    first = next(b for b in forward.memory.buffers if b.node == "addmm")
    assert (first.bytes, first.shape) == (16 * 128 * 4, "16x128")


# -- against eager ----------------------------------------------------------------------------


@pytest.mark.slow
def test_against_eager_sets_what_eager_saves_beside_each_line(tmp_path):
    """mlp: eager saves GELU's input (fc1's output, made at fc1's line) and GELU's output
    (LayerNorm's input); the compiled backward recomputes GELU, so it saves 16x128 float32
    less at GELU's line and the same elsewhere."""
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from tests.conftest import REPO

    record = record_factory(f"{EXAMPLES / 'mlp.py'}:make",
                            RecordOptions(device="virtual-cuda", train=True, workspace=REPO, against_eager=True))
    eager = record.eager_memory
    assert eager is not None and eager.device == "cuda"  # the factory ran as a program: on the virtual GPU
    assert eager.saved_inputs_bytes > 0  # x and the weights: counted apart
    with StoreBackend(tmp_path / ".kernelscope", create=True) as store:
        run = store.run(store.write_run(record))
        memory = run.memory()
        assert memory.eager.saved_bytes == eager.saved_bytes
        per_file = run.file_memory(str(EXAMPLES / "mlp.py"))
        gelu = example_line("mlp", "F.gelu(h)")
        assert per_file[gelu].eager_saved_bytes == 16 * 128 * 4 and per_file[gelu].more_than_eager == -16 * 128 * 4
        fc1, norm = example_line("mlp", "self.fc1(x)"), example_line("mlp", "self.norm(h)")
        assert per_file[fc1].more_than_eager == 0 and per_file[norm].more_than_eager == 0
        assert memory.saved_for_backward_bytes == eager.saved_bytes - 16 * 128 * 4
        data = run.dump()
        validate_dump(data)
        assert data["run"]["eager_memory"]["saved_bytes"] == eager.saved_bytes


# -- the diff gate ------------------------------------------------------------------------------


@pytest.mark.slow
def test_diff_gate_trips_on_a_peak_above_the_margin(mlp_train, tmp_path, run_cli):
    _, _, run = mlp_train
    before = run.dump()
    after = json.loads(json.dumps(before))
    memory = after["run"]["memory"]
    memory["peak_bytes"] = int(memory["peak_bytes"] * 1.2)
    line = next(entry for entry in memory["lines"] if entry["live_at_peak_bytes"])
    line["live_at_peak_bytes"] += memory["peak_bytes"] - before["run"]["memory"]["peak_bytes"]
    (tmp_path / "a.json").write_text(json.dumps(before))
    (tmp_path / "b.json").write_text(json.dumps(after))
    tripped = run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on", "memory+10%"])
    assert tripped.returncode == 1, tripped.stderr
    assert "peak memory" in tripped.stdout and f"{line['file']}:{line['line']}" in tripped.stdout
    passed = run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on", "memory+25%"])
    assert passed.returncode == 0, passed.stdout + passed.stderr
    same = run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--fail-on", "memory"])
    assert same.returncode == 0, same.stdout + same.stderr
    bad = run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--fail-on", "memory+ten"])
    assert bad.returncode == 2 and "memory+10%" in bad.stderr


@pytest.mark.slow
def test_python_api_gives_the_memory_and_its_picture(mlp_train):
    import kernelscope

    _, store, run = mlp_train
    with kernelscope.open(store.root) as api_store:
        api_run = api_store.run(run.id)
        assert api_run.memory.peak_bytes == run.memory().peak_bytes
        picture = api_run.memory_svg()
        assert picture.startswith('<svg class="memory"') and picture.count('<polyline class="mline"') == 2
        backward = next(g for g in api_run.memory.graphs if g.kind == "backward")
        assert f"peak {format_bytes(backward.peak_bytes)} · wrapper L{backward.peak_line}" in picture
        assert '<div class="ks-memory"><svg class="memory"' in api_run._repr_html_()
        assert "memory (docs/memory.md" in api_run.report()
