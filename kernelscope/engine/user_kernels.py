"""A program's own Triton kernels in the compiled code: each generated copy's lines linked
to the lines of the user's kernel source, and the autotune config the run launched.

Inductor writes a user kernel (`@triton.jit` launched directly, through `@triton.autotune`
or `@triton.heuristics`, or `wrap_triton` in a `triton_op`) into the wrapper as
`define_user_defined_triton_kernel` does (torch/_inductor/codegen/wrapper.py): its own
`@triton_heuristics.user_autotune(configs=..., ...)` and `@triton.jit` decorators, then
`user_defined_triton_kernel_transitive_closure_source_code`: the kernel's `JITFunction.src`
(the function from its `def`, dedented), then each `@triton.jit` helper it calls (found
through the function's globals), each under its own `@triton.jit`. So every line of a
function in the copy is the line of the user's function at the same offset from `def`;
each link is made only where the two texts agree (stripped), so an edited copy (an
epilogue fused into the kernel) links only what is still the user's.

The kernel object comes from the post-grad node that launches it: its `kernel_idx` names
it in torch's `kernel_side_table` (an `Autotuner` or `Heuristics` around the
`JITFunction`). The config: on virtual-cuda the one the interpreter launched
(devices/user_triton.py keeps it on the autotuner: the first after `prune_configs_by`,
untimed); on a GPU the one Inductor's `user_autotune` kept (asm_launches, filled in by
`add_gpu_choices`).
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap

from kernelscope.run_record import GraphRecord, SourceLocation, UserKernel, UserKernelLine

LAUNCHED_ATTRIBUTE = "_kernelscope_launched"  # set by devices/user_triton.py on an Autotuner
_CONSTANTS = re.compile(r"'constants': (\{[^{}]*\})")
_JIT_DECORATOR = re.compile(r"^\s*@(triton\.)?jit\b")
_INTERPRETER_RULE = ("virtual-cuda: the first config after prune_configs_by, untimed (Triton's interpreter "
                     "cannot time a kernel), as the run launched it")


def describe(kernel_source: str, launching_nodes: list[str], post_grad_gm,
             triton_kernels: dict[int, object]) -> UserKernel | None:
    """The user kernel launched by `launching_nodes` (post-grad HOP nodes), with each line
    of its generated copy `kernel_source` linked to the user's line; None when no launching
    node names a kernel of `triton_kernels` (torch's side table as codegen saw it)."""
    wrapped = _kernel_object(launching_nodes, post_grad_gm, triton_kernels)
    if wrapped is None:
        return None
    main = _jit_function(wrapped)
    try:
        return _described(main, wrapped, kernel_source.splitlines())
    except (OSError, TypeError):  # no source file to read (a kernel made by exec, in a notebook cell)
        return None


def _described(main, wrapped, generated: list[str]) -> UserKernel:
    lines: list[UserKernelLine] = []
    first_decorator: SourceLocation | None = None
    for position, function in enumerate(_closure(main)):
        found = _function_lines(function, generated, renamed=position == 0)
        if found is None:
            continue
        function_lines, decorator = found
        lines += function_lines
        if position == 0:
            first_decorator = decorator
    if first_decorator is not None:  # Inductor's user_autotune decorator: the user's decorators
        lines += _user_autotune_lines(generated, first_decorator)
    lines.sort(key=lambda row: row.line)
    file = inspect.getsourcefile(main.fn) or ""
    source_lines, first = inspect.getsourcelines(main.fn)
    def_line = first + _def_offset(source_lines)
    configs, heuristics, launched = _tuning(wrapped)
    heuristics = heuristics or _heuristics_in_decorators(source_lines)
    if launched is not None:
        chosen, chosen_by = _config_dict(launched), _INTERPRETER_RULE if len(configs) > 1 else "the only config"
    elif configs:
        chosen, chosen_by = None, "not launched in this run"
    else:  # no autotune: what it was specialized with at its launch in the graph
        chosen = _launch_constants(generated)
        chosen_by = (f"no autotune: the constexprs of its launch ({', '.join(heuristics)} from @triton.heuristics, "
                     "evaluated when Dynamo traced the launch)" if heuristics
                     else "no autotune: the constexprs of its launch, as its call passed them")
    return UserKernel(
        function=main.fn.__name__,
        source=SourceLocation(file, def_line, main.fn.__name__, source_lines[def_line - first].strip()),
        lines=lines, configs=configs, chosen=chosen, chosen_by=chosen_by, heuristics=heuristics,
    )


def add_gpu_choices(graphs: list[GraphRecord]) -> None:
    """--target cuda: each user kernel's chosen config is the one Inductor's `user_autotune`
    launched on the GPU (the kernel's `launch`, asm_launches.attach)."""
    for graph in graphs:
        for kernel in graph.kernels:
            if kernel.user is None or kernel.launch is None:
                continue
            kernel.user.chosen = dict(kernel.launch["config"])
            timed = len(kernel.launch.get("candidates") or []) > 1
            kernel.user.chosen_by = ("timed on the GPU by Inductor's user_autotune at the first launch" if timed
                                     else "the only config")


# -- the kernel object ---------------------------------------------------------------


def _kernel_object(launching_nodes: list[str], post_grad_gm, triton_kernels: dict[int, object]):
    by_name = {node.name: node for node in post_grad_gm.graph.nodes}
    for name in launching_nodes:
        node = by_name.get(name)
        index = node.kwargs.get("kernel_idx") if node is not None else None
        if index in triton_kernels:
            return triton_kernels[index]
    return None


def _jit_function(kernel):
    """The JITFunction inside an Autotuner / Heuristics (each keeps what it wraps in `fn`)."""
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction):
        kernel = kernel.fn
    return kernel


def _tuning(wrapped) -> tuple[list[dict], list[str], object]:
    """(@triton.autotune's configs, the names @triton.heuristics computes, the config the
    interpreter launched) of the layers around the JITFunction."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    configs, heuristics, launched = [], [], None
    layer = wrapped
    while not isinstance(layer, JITFunction):
        if isinstance(layer, Autotuner):
            configs = [_config_dict(config) for config in layer.configs]
            launched = getattr(layer, LAUNCHED_ATTRIBUTE, None)
        elif isinstance(layer, Heuristics):
            heuristics += sorted(layer.values)
        layer = layer.fn
    return configs, heuristics, launched


def _closure(main) -> list:
    """The kernel and the `@triton.jit` helpers it calls, in Inductor's order (depth first
    over the names each function's code loads, as the transitive closure walks them)."""
    from triton.runtime.jit import JITFunction

    found, names = [], {main.fn.__name__}

    def walk(function) -> None:
        found.append(function)
        for name in function.fn.__code__.co_names:
            symbol = function.fn.__globals__.get(name)
            if name not in names and isinstance(symbol, JITFunction):
                names.add(name)
                walk(symbol)

    walk(main)
    return found


# -- lines -----------------------------------------------------------------------------


def _function_lines(function, generated: list[str], renamed: bool):
    """The links of one function's lines in the copy, and the user's first decorator line;
    None when the copy has no such function. `renamed`: Inductor may rename the kernel
    itself (`config.triton.unique_user_kernel_names`: `def silu_0(`)."""
    name = function.fn.__name__
    pattern = re.compile(rf"^def {re.escape(name)}{'(_[0-9]+)?' if renamed else ''}\s*\(")
    start = next((index for index, text in enumerate(generated) if pattern.match(text)), None)
    if start is None:
        return None
    file = inspect.getsourcefile(function.fn) or ""
    source_lines, first = inspect.getsourcelines(function.fn)
    def_offset = _def_offset(source_lines)
    rows: list[UserKernelLine] = []
    for step, text in enumerate(source_lines[def_offset:]):
        index = start + step
        if index >= len(generated):
            break
        copy = generated[index]
        same = copy.strip() == text.strip() or (step == 0 and pattern.match(copy) is not None)
        if same and copy.strip():
            rows.append(UserKernelLine(index + 1, SourceLocation(file, first + def_offset + step, name,
                                                                 text.strip()), "copied from"))
    decorators = [offset for offset in range(def_offset) if source_lines[offset].lstrip().startswith("@")]
    jit = next((offset for offset in decorators if _JIT_DECORATOR.match(source_lines[offset])), None)
    if start > 0 and _JIT_DECORATOR.match(generated[start - 1]) and jit is not None:
        rows.append(UserKernelLine(start, SourceLocation(file, first + jit, name, source_lines[jit].strip()),
                                   "decorator of"))
    top = decorators[0] if decorators else def_offset
    return rows, SourceLocation(file, first + top, name, source_lines[top].strip())


def _user_autotune_lines(generated: list[str], decorator: SourceLocation) -> list[UserKernelLine]:
    """Inductor's `@triton_heuristics.user_autotune(...)` block (the configs it kept, its
    launch metadata): linked to the user's first decorator (`@triton.autotune(`, say)."""
    start = next((index for index, text in enumerate(generated)
                  if text.startswith("@triton_heuristics.user_autotune(")), None)
    if start is None:
        return []
    rows = []
    for index in range(start, len(generated)):
        rows.append(UserKernelLine(index + 1, decorator, "configs and launch metadata of"))
        if generated[index] == ")":
            break
    return rows


def _def_offset(source_lines: list[str]) -> int:
    """Index of the `def` line in a function's source (after its decorators)."""
    return next(index for index, text in enumerate(source_lines) if text.lstrip().startswith("def "))


# -- configs ---------------------------------------------------------------------------


def _config_dict(config) -> dict:
    """A triton.Config as Inductor writes it in `user_autotune(configs=[...])`."""
    found = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    if getattr(config, "num_ctas", 1) != 1:
        found["num_ctas"] = config.num_ctas
    if getattr(config, "maxnreg", None) is not None:
        found["maxnreg"] = config.maxnreg
    return found


def _launch_constants(generated: list[str]) -> dict | None:
    """The constexprs Inductor specialized the copy with (`triton_meta`'s `constants`)."""
    for text in generated:
        found = _CONSTANTS.search(text) if text.lstrip().startswith("triton_meta=") else None
        if found:
            try:
                return ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError):
                return None
    return None


def _heuristics_in_decorators(source_lines: list[str]) -> list[str]:
    """The names a `@triton.heuristics({...})` decorator of the user's function computes
    (Dynamo evaluates heuristics while it traces the launch, so its kernel is the bare
    JITFunction); [] without one."""
    try:
        tree = ast.parse(textwrap.dedent("".join(source_lines)))
    except SyntaxError:
        return []
    function = tree.body[0] if tree.body else None
    for decorator in getattr(function, "decorator_list", []):
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "heuristics" and decorator.args and isinstance(decorator.args[0], ast.Dict)):
            return [key.value for key in decorator.args[0].keys if isinstance(key, ast.Constant)]
    return []
