"""`--memory` on the CPU (docs/memory.md): tests/data/memory_matmuls.py trained on cpu-triton
--execute (extern matmuls only, so no Triton interpreter holds tensors past their `del`),
the compiled step run again with the CPU allocator's events recorded (torch.profiler), set
beside the step the wrappers predict; and the join of allocation frames to wrapper lines,
fed frames that name the files the recording's wrappers really ran from."""
from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys

import pytest

from kernelscope.compile_text.wrapper_memory import read_timeline
from kernelscope.profile.memory_join import snapshot_allocations
from kernelscope.store import StoreBackend, validate_dump
from kernelscope.store.parts import memory_step
from tests.conftest import DATA, EXAMPLES, REPO

MODEL = DATA / "memory_matmuls.py"
FC1 = next(number for number, text in enumerate(MODEL.read_text().splitlines(), 1) if "h = self.fc1(x)" in text)


# Run in a fresh process: --execute needs Triton's interpreter on before torch's Triton
# helpers are imported. It records the model, notes the files of the wrappers' `call`
# functions the measured step really executes (a Python profile hook around the real
# step; each file read while it exists) and pickles both.
RECORD = """
import pickle, sys
from pathlib import Path
from kernelscope.engine import memory_measure
from kernelscope.engine.recorder import RecordOptions, record_factory

loaded = {}
measure = memory_measure.measure_step

def note_wrapper_calls(frame, event, arg):
    path = frame.f_code.co_filename
    if event == "call" and frame.f_code.co_name == "call" and path not in loaded:
        with open(path, encoding="utf-8") as file:
            loaded[path] = file.read()

def measure_and_note_loaded(*args, **kwargs):
    sys.setprofile(note_wrapper_calls)
    try:
        return measure(*args, **kwargs)
    finally:
        sys.setprofile(None)

memory_measure.measure_step = measure_and_note_loaded
record = record_factory(sys.argv[1] + ":make", RecordOptions(device="cpu-triton", execute=True, train=True,
                                                             measure_memory=True, workspace=Path(sys.argv[3])))
with open(sys.argv[2], "wb") as file:
    pickle.dump((record, loaded), file)
"""


@pytest.fixture(scope="module")
def measured_mlp(tmp_path_factory):
    """The recording, the wrapper files its measured step executed, and the run stored."""
    folder = tmp_path_factory.mktemp("measured")
    done = subprocess.run([sys.executable, "-c", RECORD, str(MODEL), str(folder / "run.pickle"), str(REPO)],
                          env={**os.environ, "PYTHONPATH": str(REPO), "TORCHINDUCTOR_COMPILE_THREADS": "1"},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(folder / "run.pickle", "rb") as file:
        record, loaded = pickle.load(file)
    store = StoreBackend(folder / ".kernelscope", create=True)
    run_id = store.write_run(record)
    yield record, loaded, store.run(run_id)
    store.close()


def _step(record, size=int):
    return memory_step.step_peak([memory_step.from_buffers(
        graph.key, graph.kind, graph.compile_id, [(e.line, e.action, e.bytes) for e in graph.memory.timeline],
        graph.memory.buffers) for graph in record.graphs if graph.memory is not None], size)


@pytest.mark.slow
def test_each_graph_knows_the_file_its_wrapper_ran_from(measured_mlp):
    record, loaded, _ = measured_mlp
    assert len(record.graphs) == 2
    for graph in record.graphs:
        assert graph.memory.wrapper_file in loaded, (graph.key, sorted(loaded))
        assert loaded[graph.memory.wrapper_file] == graph.wrapper_text  # the stored wrapper's lines are its lines


@pytest.mark.slow
def test_the_measured_step_is_the_predicted_step(measured_mlp):
    record, _, run = measured_mlp
    measured = record.measured_memory
    assert measured.device == "cpu" and measured.allocations > 0
    predicted = _step(record)
    # the prediction counts every buffer of the wrappers, the backward's saved activation and
    # its tangent freed at their `del`, the forward's output dropped with the loss; the
    # measurement also holds the loss's scalars (4 bytes each: its sum, its gradient)
    assert predicted.graph.endswith("-backward")
    assert 0 <= measured.peak_bytes - predicted.bytes <= 16, (measured.peak_bytes, predicted)
    # the model this replaces — the forward's outputs and the tangent added to the backward's
    # own peak, every backward input held to its end — is over by more than 10%
    forward = next(graph for graph in record.graphs if graph.kind == "forward")
    backward = next(graph for graph in record.graphs if graph.kind == "backward")
    left = sum(b.bytes for b in forward.memory.buffers if b.kind == "buffer" and b.freed_line == 0)
    inputs = [b for b in backward.memory.buffers if b.kind == "input"]
    held = read_timeline(backward.wrapper_text, {b.name: b.bytes for b in backward.memory.buffers},
                         [b.name for b in inputs])
    tangents = sum(b.bytes for b in inputs if b.name.startswith("tangents"))
    assert left + tangents + held.peak_bytes - held.inputs_bytes > measured.peak_bytes * 1.1
    memory = run.memory()
    assert memory.step.bytes == predicted.bytes
    assert memory.measured.peak_bytes == measured.peak_bytes
    data = run.dump()
    validate_dump(data)
    assert data["run"]["memory"]["measured"]["peak_bytes"] == measured.peak_bytes
    assert data["run"]["memory"]["step_peak_bytes"] == predicted.bytes


@pytest.mark.slow
def test_allocation_frames_join_the_wrapper_lines_they_name(measured_mlp, tmp_path):
    """A snapshot in torch.cuda.memory._snapshot()'s shape, made from the real run: each
    allocation the timelines predict, with frames innermost first — torch's own file, the
    wrapper file the recording ran at that line, the step's caller; and allocations made
    outside every wrapper (the loss, AOTAutograd's restrided tangent)."""
    from kernelscope.engine import memory_measure

    record, _, _ = measured_mlp
    traces, expected = [], {}
    for graph in record.graphs:
        for event in graph.memory.timeline:
            if event.action != "allocate":
                continue
            traces.append({"action": "alloc", "size": -(-event.bytes // 512) * 512, "frames": [
                {"filename": "/site-packages/torch/_ops.py", "line": 840, "name": "__call__"},
                {"filename": graph.memory.wrapper_file, "line": event.line, "name": "call"},
                {"filename": str(EXAMPLES / "train.py"), "line": 12, "name": "step"}]})
            expected[(graph.key, event.line)] = -(-event.bytes // 512) * 512
            traces.append({"action": "free_requested", "size": 512, "frames": []})
    traces.append({"action": "alloc", "size": 512, "frames": [
        {"filename": "/site-packages/torch/_functorch/_aot_autograd/runtime_wrappers.py", "line": 2481}]})
    snapshot = {"segments": [], "device_traces": [traces]}
    step = memory_measure.MeasuredStep("cuda", "fixture", 1000, 2000, snapshot_allocations(snapshot))
    joined = memory_measure.joined(step, record.graphs)
    assert joined.allocations == len(expected) + 1 and joined.joined == len(expected)
    assert {(line.graph, line.line): line.bytes for line in joined.lines} == expected
    # stored with the run, each line is read back beside the timeline's bytes and its model line
    store = StoreBackend(tmp_path / ".kernelscope", create=True)
    try:
        run = store.run(store.write_run(dataclasses.replace(record, measured_memory=joined)))
        lines = run.memory().measured.lines
        fc1 = next(line for line in lines if line.line == FC1 and line.graph.endswith("forward"))
        assert (fc1.predicted_bytes, fc1.bytes, fc1.module) == (16 * 256 * 4, 16 * 256 * 4, "fc1")
        assert all(line.predicted_bytes is not None and line.bytes >= line.predicted_bytes for line in lines)
    finally:
        store.close()
