"""A foreach/combo kernel's sub-kernels (`triton_for_fused_*`, a compiled optimizer step's
`_foreach_*` ops): each sub-kernel's block of lines, the nodes it computes and the
optimizer parameters it updates.

A combo kernel computes one sub-kernel per `if pid < num_xblocks_<i>:` block; the probes
saw which nodes each block's lines came from (KernelLineCapture.parts), and which buffer
each pointer argument stands for (`in_ptr3` -> `arg3_1`). A block's parameters are those
whose tensors (the parameter, its gradient, its state) it loads or stores; a block that
touches only buffers earlier kernels computed (a foreach op's intermediate result) has the
parameters of the blocks that wrote them.
"""
from __future__ import annotations

import re

from kernelscope.compile_text import wrapper_code
from kernelscope.engine import optimizer_params
from kernelscope.engine.probes import GraphCapture, PreGradCapture
from kernelscope.run_record import GraphRecord, KernelPart, OptimizerParam

_POINTER = re.compile(r"\b(?:in_out_ptr|in_ptr|out_ptr)\d+\b")


def add_parts(record: GraphRecord, capture: GraphCapture, pre_grad: PreGradCapture | None) -> None:
    """Give each combo kernel of `record` its sub-kernels, in the order the wrapper defines them."""
    inputs = optimizer_params.post_grad_inputs(capture.post_grad_gm, pre_grad.optimizer_inputs if pre_grad else {})
    written: dict[str, list[OptimizerParam]] = {}  # an intermediate buffer -> the params of the block that wrote it
    for kernel in record.kernels:
        probe = capture.kernels.get(kernel.name)
        if probe is None or not probe.parts:
            continue
        kernel.parts = []
        for index, (first, last, texts) in sorted(_blocks(kernel.source).items()):
            buffers = [buffer for text in texts for pointer in _POINTER.findall(text)
                       for buffer in probe.arg_buffers.get(pointer, [])]
            params = [inputs[buffer] for buffer in buffers if buffer in inputs] or [
                param for buffer in buffers for param in written.get(buffer, [])]
            params = _unique(params)
            for buffer in buffers:
                if buffer not in inputs and params:
                    written[buffer] = params
            nodes = probe.parts[index] if index < len(probe.parts) else []
            kernel.parts.append(KernelPart(index, first, last, list(nodes), params))


def _blocks(source: str) -> dict[int, tuple[int, int, list[str]]]:
    """Sub-kernel index -> (first line, last line, the block's lines' text)."""
    blocks: dict[int, tuple[int, int, list[str]]] = {}
    part: int | None = None
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        part = wrapper_code.combo_block(stripped, part)
        if part is None:
            continue
        first, _, texts = blocks.get(part, (number, number, []))
        blocks[part] = (first, number, [*texts, stripped])
    return blocks


def _unique(params: list[OptimizerParam]) -> list[OptimizerParam]:
    seen: dict[tuple[int, int], OptimizerParam] = {}
    for param in params:
        seen.setdefault((param.group, param.index), param)
    return sorted(seen.values(), key=lambda param: (param.group, param.index))
