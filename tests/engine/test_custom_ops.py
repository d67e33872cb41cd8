"""A custom op that mutates its input, compiled (examples/mutating_custom_op.py, virtual-cuda):
torch functionalizes it (`auto_functionalized_v2`) and Inductor makes it an in-place extern
call again; its node reaches the calling line, its wrapper call is attributed to it, and its
lineage names the pass. Recorded once per session (conftest.RecordingCache)."""
from __future__ import annotations

import pytest
from conftest import example_line

from kernelscope.store.writing.coverage import compute_coverage

pytestmark = pytest.mark.slow


def test_mutating_custom_op_is_traced_to_its_call_and_its_extern_line(recordings):
    run = recordings.get("mutating_custom_op")
    (graph,) = run.graphs
    call = example_line("mutating_custom_op", "scale_(h, 0.5)")
    (node,) = [n for n in graph.post_grad_nodes if n.target.endswith("kernelscope_examples.scale_.default")]
    assert node.source.line == call and node.module_path == ""
    assert [(step.pass_name, step.action) for step in node.lineage][:1] == [("decompose_auto_functionalized",
                                                                              "create")]
    assert any(step.node.startswith("auto_functionalized") for step in node.lineage)
    (extern,) = [k for k in graph.kernels if k.kind == "extern" and "scale_" in k.name]
    assert node.name in extern.nodes and extern.wrapper_lines
    called = [row for row in graph.wrapper_lines if "scale_.default(" in row.text]
    assert called and all(node.name in row.nodes for row in called)
    coverage = compute_coverage(run)
    assert coverage["kernel_lines"]["share"] == 1.0 and coverage["wrapper_lines"]["share"] == 1.0, coverage
    assert all(n.source is not None for n in graph.post_grad_nodes if n.op == "call_function")
