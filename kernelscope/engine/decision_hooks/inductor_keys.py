"""Decision keys made from Inductor's own cache keys (docs/decisions.md), and the words
a decision is shown with.

- pad_mm: `should_pad_bench_key(match, mat1, mat2, op, input)`, the key pad_mm caches
  its benchmark verdict under (shapes, strides, dtypes, whether padding time counts,
  the op, the bias, TF32);
- pad_mm's compute-bound test: its arguments (M, K, N, dtype);
- max-autotune: select_algorithm's cache key, `op`, the inputs key
  (`create_inputs_key`: device, dtype, sizes, strides, offset of every input) and the
  float32 matmul precision (plus the hint override when there is one); each choice
  by its template or ATen op and its description (a Triton template's config);
- a Triton kernel's launch config and a fusion benchmark: kernelscope.decisions.keys.
"""
from __future__ import annotations

import ast
import re

_COUNTER = re.compile(r"_\d+$")


def autotune_key(op: str, inputs: str, hint_override, precision: str) -> str:
    hint = "" if hint_override is None else f"|hint={hint_override}"
    return f"{op}|{inputs}|{precision}{hint}"


def choice_ids(choices) -> list[str]:
    """A name per choice that two compiles of the same GEMM share: the choice's name
    without Inductor's running number (`triton_mm_65` -> `triton_mm`) and its description
    (a template's config); a repeated one is numbered (`#2`)."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for choice in choices:
        name = _COUNTER.sub("", str(getattr(choice, "name", type(choice).__name__)))
        description = str(getattr(choice, "description", "") or "")
        base = f"{name} {description}".strip()
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return ids


def autotune_summary(op: str, inputs: str) -> str:
    """`mm(128x16, 16x64) torch.float32` from select_algorithm's inputs key."""
    try:
        keys = ast.literal_eval(inputs)
    except (ValueError, SyntaxError):
        return op
    shapes, dtypes = [], []
    for key in keys if isinstance(keys, (list, tuple)) else []:
        if not isinstance(key, (list, tuple)) or len(key) < 3:
            continue
        ndim = (len(key) - 3) // 2  # (device, dtype, *sizes, *strides, offset)
        shapes.append("x".join(str(size) for size in key[2:2 + ndim]))
        dtypes.append(str(key[1]))
    return f"{op}({', '.join(shapes)}) {', '.join(sorted(set(dtypes)))}".strip()


def pad_mm_summary(mat1, mat2, op, input=None) -> str:
    """`aten.mm [s77, 16] @ [16, 10] torch.float32` (+ the bias of an addmm)."""
    def shape(tensor) -> str:
        return "[" + ", ".join(str(size) for size in tensor.shape) + "]"

    name = str(getattr(op, "__name__", op)).removeprefix("aten.")
    bias = f" + {shape(input)}" if input is not None and hasattr(input, "shape") else ""
    return f"aten.{name} {shape(mat1)} @ {shape(mat2)}{bias} {mat1.dtype}"


def compute_bound_key(m, k, n, dtype) -> str:
    return f"M={m} K={k} N={n} {dtype}"


def compile_id() -> str:
    """The compile id being compiled (`0/0`), or "" outside one."""
    try:
        from torch._guards import CompileContext

        current = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001 - only a label
        return ""
    return "" if current is None else str(current)
