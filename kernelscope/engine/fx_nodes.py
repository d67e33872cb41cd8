"""FX nodes as kernelscope records: where in user source a node came from (its
whole user call stack and module instance), which passes made it, and where it
sits in the printed graph file. The texts it reads (stack traces, the printed graph)
are parsed by `kernelscope.compile_text`; this module reads live torch objects."""
from __future__ import annotations

import os
import re

from kernelscope.compile_text.stack_traces import user_frames
from kernelscope.run_record import FxNode, PassStep, SourceLocation


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


_MODULE_ROOT = re.compile(r"^L\['[^']*'\]\.?")
_MODULE_INDEX = re.compile(r"\[(?:'([^']*)'|(\d+))\]")
# A module reached through a wrapper its forward was replaced with (torchtitan's
# parallelize: `attention.forward.__closure__[0].cell_contents.__self__.wo`).
_MODULE_CLOSURE = re.compile(r"(?:^|\.)\w+\.__closure__\.\d+\.cell_contents(?:\.__self__)?")


def module_instance(nn_module_stack: dict | None) -> tuple[str, str]:
    """(instance path, class) of the innermost module in Dynamo's `nn_module_stack`:
    `("blocks.0.attn.qkv", "torch.nn.modules.linear.Linear")`; ("", "") outside any submodule."""
    if not nn_module_stack:
        return "", ""
    path, module_type = list(nn_module_stack.values())[-1][:2]
    path = _MODULE_ROOT.sub("", str(path))
    path = _MODULE_INDEX.sub(lambda match: "." + (match.group(1) or match.group(2)), path).strip(".")
    path = _MODULE_CLOSURE.sub("", path).strip(".")
    if isinstance(module_type, str):
        class_name = module_type
    else:
        class_name = f"{getattr(module_type, '__module__', '')}.{getattr(module_type, '__qualname__', module_type)}"
    # A factory file is imported under a private module name (targets.TARGET_MODULE_PREFIX):
    # name its classes as the user knows them.
    return path, class_name.strip(".").removeprefix("kernelscope_target_")


# Passes that only trace a graph into the next one (Dynamo -> AOTAutograd): the
# pre-grad -> post-grad link already says that, so lineage leaves them out.
_TRACING_PASSES = ("Interpreter_",)


def pass_lineage(from_node) -> list[PassStep]:
    """The passes that made a node, from FX `from_node` provenance (recorded when
    Inductor's provenance tracking is on): latest pass first, each step once."""
    steps: list[PassStep] = []
    pending = list(reversed(from_node or ()))
    seen: set[int] = set()
    while pending:
        source = pending.pop()
        if id(source) in seen:
            continue
        seen.add(id(source))
        pass_name = getattr(source, "pass_name", "") or ""
        if pass_name and not pass_name.startswith(_TRACING_PASSES):
            action = "+".join(str(getattr(a, "value", a)) for a in (getattr(source, "action", None) or ()))
            step = PassStep(pass_name=pass_name, action=action, node=getattr(source, "name", "") or "")
            if step not in steps:
                steps.append(step)
        pending.extend(reversed(getattr(source, "from_node", None) or ()))
    return steps


def target_name(target) -> str:
    if isinstance(target, str):
        return target
    text = str(target)
    if text.startswith(("aten.", "prims.", "inductor.", "quantized.", "_c10d_functional.", "c10d_functional.",
                        "symm_mem.", "_dtensor.", "c10d.")) or "::" in text:
        return text
    name = getattr(target, "__name__", text)
    module = getattr(target, "__module__", "") or ""
    return f"{module}.{name}" if module and module != "builtins" else name


def to_fx_node(name, op, target, stack_trace, graph_lines, skip_prefixes, nn_module_stack=None) -> FxNode:
    stack = user_frames(stack_trace, skip_prefixes)
    source = stack[-1] if stack else None
    line = graph_lines.get(name) or (graph_lines["__signature__"] if op == "placeholder" else 0)
    module_path, module_class = module_instance(nn_module_stack)
    return FxNode(
        name=name,
        op=op,
        target=target,
        source=source,
        source_via="stack_trace" if source else "",
        graph_line=line,
        stack=stack,
        module_path=module_path,
        module_class=module_class,
    )


def skip_prefixes() -> tuple[str, ...]:
    """Directories whose frames are not the program's lines: torch's, and Triton's runtime
    (a user kernel launched through `@triton.autotune` or `@triton.heuristics` is traced
    through their `run`: the line that launched it is the program's)."""
    return (_torch_dir(), *_triton_dir())


def _triton_dir() -> tuple[str, ...]:
    import importlib.util

    spec = importlib.util.find_spec("triton")
    return (os.path.dirname(os.path.abspath(spec.origin)) + os.sep,) if spec is not None and spec.origin else ()


def calling_frames() -> list[SourceLocation]:
    """The user frames that called the function being compiled, outermost first: called
    from inside a compile (a probe), the frames outside torch between the compile and
    kernelscope's own code that ran the user's (a script's `step()` line, not the recorder).
    Frames of the standard library, of frozen modules (runpy) and of Triton's runtime (as
    `skip_prefixes` leaves them out of a node's stack) are left out."""
    import linecache
    import sys
    import sysconfig

    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    torch_dir = _torch_dir()
    not_the_program = _triton_dir() + tuple(os.path.abspath(sysconfig.get_paths()[key]) + os.sep
                                            for key in ("stdlib", "platstdlib"))
    found: list[SourceLocation] = []
    frame = sys._getframe(1)
    in_compile = False  # past the probe's own frames, inside torch's compile
    while frame is not None:
        file = frame.f_code.co_filename
        path = os.path.abspath(file)
        if path.startswith(torch_dir):
            in_compile = True
        elif path.startswith(own):
            caller = frame.f_back
            called_by_torch = caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(torch_dir)
            if in_compile and not called_by_torch:
                break  # kernelscope ran the user's code from here (a patch inside torch is called by torch)
        elif not file.startswith("<") and not path.startswith(not_the_program):
            found.append(SourceLocation(path, frame.f_lineno, frame.f_code.co_name,
                                        linecache.getline(path, frame.f_lineno).strip()))
        frame = frame.f_back
    return list(reversed(found))


def add_callers(record: FxNode, callers: list[SourceLocation], skip: tuple[str, ...]) -> None:
    """A node whose stack holds only torch's own frames (a compiled `opt.step`: the code
    Dynamo traced is torch's) is reached from the user frames that called it: they go
    above its stack, so the user's `opt.step()` line answers with its nodes."""
    if callers and record.op == "call_function" and record.source is not None and record.source.file.startswith(skip):
        record.stack = list(callers) + (list(record.stack) or [record.source])
