"""What a `--target cuda` run says about graphs a GPU did not compile (docs/targets.md).

Under `--target cuda` a program runs as written: a graph whose inputs are CPU tensors (a
script that never moved its model or inputs to the GPU) is compiled by Inductor for the
CPU, with C++ kernels, not Triton. virtual-cuda compiles such a graph as a GPU's (its
copy on fake cuda tensors), so the two targets then differ; the run says which graphs and
why. Likewise a training forward whose backward never ran: torch compiles a backward at
the first backward call (at once only when it saves symbolic sizes), virtual-cuda always
at once.
"""
from __future__ import annotations


def notes(captures, built: dict) -> list[str]:
    """The run's warnings about its CPU graphs and forwards without a backward."""
    graphs = [built[id(capture)] for capture in captures if id(capture) in built and capture.parent is None]
    on_cpu = [built[id(capture)].compile_id for capture in captures
              if id(capture) in built and capture.parent is None and _input_devices(capture.post_grad_gm) == {"cpu"}]
    found = []
    if on_cpu:
        found.append(
            f"--target cuda: graph(s) {', '.join(dict.fromkeys(on_cpu))} were compiled for the CPU: their inputs are "
            "CPU tensors (the program never moved its model or inputs to the GPU), so Inductor wrote C++ kernels, "
            "not Triton. Move them with .to('cuda'), or record with --target virtual-cuda, which compiles a CPU "
            "program's graphs as a GPU's")
    backward = {graph.compile_id for graph in graphs if graph.kind == "backward"}
    lazy = [graph.compile_id for graph in graphs if graph.kind == "forward" and graph.compile_id not in backward]
    if lazy:
        found.append(
            f"--target cuda: forward graph(s) {', '.join(dict.fromkeys(lazy))} have no backward: torch compiles a "
            "backward at the first backward call (at once only when it saves symbolic sizes) and this program "
            "made none; virtual-cuda compiles every backward at once")
    return found


def _input_devices(gm) -> set[str]:
    """The device types of a post-grad graph's tensor inputs (empty: none known)."""
    if gm is None:
        return set()
    devices = set()
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        device = getattr(node.meta.get("val"), "device", None)
        if device is not None:
            devices.add(device.type)
    return devices
