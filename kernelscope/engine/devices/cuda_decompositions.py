"""Inductor's device-dependent decompositions, decided as for CUDA tensors (virtual-cuda).

AOTAutograd applies Inductor's decomposition table while it traces, and virtual-cuda
traces CPU tensors. Some entries choose by device, and a GPU compile takes the other
branch. While a virtual-cuda recording runs:
- `convolution_backward` asks `is_gpu(device type)` before computing the bias
  gradient as a separate reduction (which Inductor then fuses): the CPU stands for
  the GPU there. Seen on an H100: conv_bn's training graph matched only with this.
- `bmm` has a CPU-only rewrite (a row times a column becomes a sum): it is skipped,
  and every other case goes to the original entry.

Entries whose GPU branch would have to be restated (mm, addmm) are left alone:
restating torch's code drifted from torch 2.11's on LLaMA (bench/gpu_check.py).
"""
import contextlib
from unittest import mock


@contextlib.contextmanager
def decompositions_as_on_cuda():
    import torch
    from torch._inductor import decomposition as inductor_decomposition

    aten = torch.ops.aten
    table = inductor_decomposition.decompositions
    with contextlib.ExitStack() as stack:
        replaced = {}
        original_bmm = table.get(aten.bmm.default)
        if original_bmm is not None:
            replaced[aten.bmm.default] = _without_cpu_only_bmm_rewrite(original_bmm)
        # select_decomp_table() hands out either the table itself or a merged copy that
        # is built once and cached: both are patched, and both restored on exit.
        tables = [table]
        cached_copy = getattr(inductor_decomposition, "fast_random_decomps", None)
        if cached_copy is not None:
            tables.append(cached_copy())
        for each in tables:
            stack.enter_context(mock.patch.dict(each, replaced))
        original_is_gpu = getattr(inductor_decomposition, "is_gpu", None)
        if original_is_gpu is not None:
            stack.enter_context(mock.patch.object(
                inductor_decomposition, "is_gpu",
                lambda device_type: device_type == "cpu" or original_is_gpu(device_type)))
        yield


def _without_cpu_only_bmm_rewrite(original):
    def bmm(self, batch2, *args, **kwargs):
        if self.device.type == "cpu" and _known(self.size(1) == 1) and _known(batch2.size(-1) == 1):
            return NotImplemented  # the rewrite a GPU never does
        return original(self, batch2, *args, **kwargs)

    return bmm


def _known(condition) -> bool:
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return statically_known_true(condition)
