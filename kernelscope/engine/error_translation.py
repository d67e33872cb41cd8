"""Errors from the user's code or from the compile, as kernelscope's one-line errors.

`raise_translated` turns an exception raised while recording into a CompileError (Inductor
failed: the node it was lowering and that node's user line) or a TargetError (the model
raised), located at the user's `file:line` (the innermost frame outside torch and
kernelscope, or the frame Dynamo reports), and saying that the last good run in the store
is unchanged; a UserError passes through as it is. `mixed_devices_error` is the advice for
a `--target cuda` model that mixes CPU and GPU tensors; `lowered_loop_error` the one for a
`scan`/`map` compiled without `capture_scalar_outputs`.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from kernelscope.compile_text.stack_traces import user_frame
from kernelscope.errors import CompileError, TargetError, UserError

_TWO_DEVICES = r"two (different )?devices|on the same device"


def mixed_devices_error(error: BaseException, target: str = "cuda") -> TargetError | None:
    """The TargetError for a model that mixes CPU and GPU tensors under `--target cuda`, or under
    virtual-cuda, whose factory runs as a GPU program (devices/factory_program.py); None when
    `error` is not about that."""
    if not _mixes_devices(error):
        return None
    gpu = "the GPU" if target == "cuda" else "the (virtual) GPU, as a GPU program does"
    return TargetError(
        f"--target {target}: the model mixes CPU and GPU tensors ({_first_line(error)}). "
        f"kernelscope moves an nn.Module and the example inputs the factory returns to {gpu}, "
        "but not tensors held elsewhere (a function closing over a CPU model, tensors made "
        "in forward without a device): give the factory a `device` parameter and build the "
        "model and inputs on it (kernelscope calls it with device='cuda'), or create them "
        "on 'cuda' directly (the last good run in the store is unchanged)"
    )


def _mixes_devices(error: BaseException) -> bool:
    # "... found two different devices cpu, cuda:0" (FakeTensor), "Expected all tensors to be
    # on the same device, but found at least two devices" (eager and Dynamo)
    return bool(re.search(_TWO_DEVICES, str(error)))


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    found = next((line for line in lines if re.search(_TWO_DEVICES, line)),
                 lines[0] if lines else type(error).__name__)
    return found[:300]


# Inductor's post-grad passes that rewrite a higher-order op as a while_loop whose body reads
# its step with `.item()` (torch/_inductor/fx_passes/post_grad.py).
_LOWERINGS = {"decompose_scan_to_while_loop": "scan", "decompose_map_to_while_loop": "map"}


def lowered_loop_error(error: BaseException) -> CompileError | None:
    """The CompileError for a `scan` or `map` that Inductor cannot compile because Dynamo does
    not capture scalar outputs: Inductor rewrites the op as a while_loop whose body reads the
    step index with `.item()`, which a graph compiled without
    `torch._dynamo.config.capture_scalar_outputs = True` cannot trace (torch raises
    DataDependentOutputException: aten._local_scalar_dense). None for any other error."""
    from kernelscope.engine import fx_nodes

    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        chain.append(error)
        error = error.__cause__ or error.__context__
    if not any("_local_scalar_dense" in str(item) for item in chain):
        return None
    for item in chain:
        tb = item.__traceback__
        while tb is not None:
            qualname = getattr(tb.tb_frame.f_code, "co_qualname", tb.tb_frame.f_code.co_name)
            op = next((shown for name, shown in _LOWERINGS.items() if qualname.startswith(name)), "")
            node = tb.tb_frame.f_locals.get("cur_node") if op else None
            if node is not None:
                frame = user_frame(node.meta.get("stack_trace") or "", fx_nodes.skip_prefixes())
                where = f"{frame.file}:{frame.line}" if frame is not None else "?"
                return CompileError(
                    f"{where}: torch.compile cannot compile this `{op}` unless "
                    "torch._dynamo.config.capture_scalar_outputs = True: Inductor rewrites it as a while_loop "
                    "whose body reads the step index with .item() (torch's DataDependentOutputException: "
                    "aten._local_scalar_dense). Set it before torch.compile, in the factory or the script "
                    "(the last good run in the store is unchanged)")
            tb = tb.tb_next
    return None


def fallback_reason(graph_breaks: list) -> str:
    """Why a compile left nothing to record, from the graph breaks Dynamo reported (it falls
    back to eager when its backend fails): '' when it reported none. A `while_loop`, `scan`
    or `map` Inductor failed on for want of `capture_scalar_outputs` says so."""
    if not graph_breaks:
        return ""
    scalar = [brk for brk in graph_breaks if "_local_scalar_dense" in f"{brk.reason} {brk.explanation}"]
    first = (scalar or graph_breaks)[0]
    where = f" at {first.source.file}:{first.source.line}" if first.source is not None else ""
    text = f": Dynamo fell back to eager{where} ({' '.join((first.explanation or first.reason).split())[:300]})"
    if scalar:
        text += (". A while_loop, scan or map (or a while_loop's backward, with --train) compiles only with "
                 "torch._dynamo.config.capture_scalar_outputs = True: Inductor reads the loop's step with .item()")
    return text


def raise_translated(error: BaseException, target_file: Path | None, probes=None) -> None:
    """Turn an exception from the user's run into a one-line error naming file:line."""
    import traceback

    from kernelscope.engine import fx_nodes

    if isinstance(error, UserError):
        raise error
    lowered = lowered_loop_error(error)
    if lowered is not None:
        raise lowered from error
    skip = fx_nodes.skip_prefixes() + (os.path.dirname(os.path.dirname(__file__)) + os.sep,)
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if not frame.filename.startswith(skip):
            location = f"{frame.filename}:{frame.lineno}"
    text = str(error)
    message = text.strip().splitlines()
    first = message[0] if message else type(error).__name__
    if first.endswith(":"):  # "backend='inductor' raised:" — the cause is on the next line
        first = " ".join([first] + [line.strip() for line in message[1:] if line.strip()][:1])
    # Dynamo's errors carry the user's frames as text ("from user code: File ...").
    for marker in ("from user code:", "Original traceback:"):
        if marker in text:
            frame = user_frame(text.split(marker, 1)[1], skip)
            if frame is not None:
                location = f"{frame.file}:{frame.line}"
                break
    explanation = next((line.strip().removeprefix("Explanation: ") for line in message
                        if line.strip().startswith("Explanation: ")), "")
    if explanation:
        first = f"{first}: {explanation[-300:]}"
    if "scan might be aliasing the input or the output" in text:
        first += (" — torch's own limitation when training through `scan`: its autograd refuses a combine_fn "
                  "whose carry is made by an op that saves its output (tanh, sigmoid), pytorch/pytorch#195977; "
                  "inference (no gradient) compiles")
    if "combine_mode='pointwise'" in text and "CUDA" in text:
        first += (" — associative_scan's pointwise mode checks for GPU tensors, and cpu-triton (or a model "
                  "passed to kernelscope.record) captures on CPU tensors: record it with --target virtual-cuda "
                  "(a factory or script runs on the virtual GPU) or on a GPU (--target cuda), or use "
                  "combine_mode='generic'")
    failed_node = getattr(probes, "failed_node", None)
    inductor_failed = failed_node is not None or type(error).__name__ in (
        "InductorError", "BackendCompilerFailed", "LoweringException")
    if inductor_failed:
        node_text = ""
        if failed_node is not None:
            name, op_target, stack_trace = failed_node
            node_text = f" while lowering node {name} ({op_target})"
            source = user_frame(stack_trace, fx_nodes.skip_prefixes())
            if source is not None:
                location = f"{source.file}:{source.line}"
        location = location or str(target_file or "")
        cause = first.replace("LoweringException: ", "")
        raise CompileError(
            f"{location}: Inductor failed{node_text}: {cause[:400]} "
            "(the last good run in the store is unchanged)"
        ) from error
    location = location or str(target_file or "")
    raise TargetError(
        f"{location}: the model raised {type(error).__name__}: {first[:400]} "
        "(the last good run in the store is unchanged)"
    ) from error
