"""`--target cuda` says which graphs a GPU did not compile (engine/cuda_target_notes.py):
graphs whose inputs are CPU tensors, and training forwards whose backward never ran. Real
FX graphs with real tensor values on their inputs; the GPU run itself is checked by
bench/cuda_cpu_graphs_check.py."""
from __future__ import annotations

import torch

from kernelscope.engine import cuda_target_notes
from kernelscope.engine.probes import GraphCapture
from kernelscope.run_record import GraphRecord


def Capture(gm: torch.fx.GraphModule) -> GraphCapture:  # noqa: N802 - reads as the class it makes
    return GraphCapture(compile_id=None, is_backward=False, is_inference=False, post_grad_gm=gm)


def _graph_on(device: str) -> torch.fx.GraphModule:
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x))
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.meta["val"] = torch.empty(2, 3, device=device)
    return gm


def test_cpu_graphs_and_forwards_without_a_backward_are_said():
    captures = [Capture(_graph_on("cpu")), Capture(_graph_on("cpu")), Capture(_graph_on("meta")),
                Capture(_graph_on("cpu"))]
    built = {id(captures[0]): GraphRecord(0, 0, 0, "forward"), id(captures[1]): GraphRecord(0, 1, 0, "forward"),
             id(captures[2]): GraphRecord(0, 1, 0, "backward"), id(captures[3]): GraphRecord(1, 0, 0, "inference")}
    cpu, lazy = cuda_target_notes.notes(captures, built)
    assert "graph(s) 0/0, 0/1, 1/0 were compiled for the CPU" in cpu and "C++ kernels" in cpu
    assert "forward graph(s) 0/0 have no backward" in lazy  # 0/1's backward was compiled


def test_a_gpu_graph_with_its_backward_says_nothing():
    captures = [Capture(_graph_on("meta"))]  # not the CPU (no GPU here: the meta device stands for it)
    assert cuda_target_notes.notes(captures, {id(captures[0]): GraphRecord(0, 0, 0, "inference")}) == []
