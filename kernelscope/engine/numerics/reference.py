"""Reference values of a post-grad graph's nodes, on the inputs the compiled graph got.

- `eager`: each aten op of the post-grad graph run one by one, as eager runs it (every
  result rounded to its dtype);
- `fp64`: the judge: every floating tensor, and every floating dtype an op is asked for
  (casts included), made float64;
- `kernel_precision`: the nodes one Triton kernel fuses, computed as Inductor's kernel
  computes them: inputs from outside the kernel are eager's values, float16/bfloat16 are
  upcast to float32 and nothing is rounded back between the fused nodes.

Nodes that draw random numbers (and what depends on them) get no reference: Inductor's
random numbers are not eager's.
"""
from __future__ import annotations

LOW_PRECISION = ("float16", "bfloat16")


def _is_random(node) -> bool:
    name = str(node.target)
    return any(word in name for word in ("rand", "seed", "dropout", "bernoulli", "normal_"))


def random_nodes(gm) -> set[str]:
    """The nodes whose value depends on random numbers."""
    tainted: set[str] = set()
    for node in gm.graph.nodes:
        if node.op == "call_function" and (_is_random(node)
                                           or any(n.name in tainted for n in node.all_input_nodes)):
            tainted.add(node.name)
    return tainted


def _map(value, fn):
    import torch

    if isinstance(value, (list, tuple)):
        return type(value)(_map(item, fn) for item in value)
    if isinstance(value, dict):
        return {key: _map(item, fn) for key, item in value.items()}
    if isinstance(value, (torch.Tensor, torch.dtype)):
        return fn(value)
    return value


def _to(dtype_of):
    """Convert floating tensors and dtypes with `dtype_of(dtype) -> dtype`."""
    import torch

    def convert(value):
        if isinstance(value, torch.dtype):
            return dtype_of(value) if value.is_floating_point else value
        if value.is_floating_point():
            return value.to(dtype_of(value.dtype))
        return value

    return convert


def _fp64(value):
    import torch

    return _map(value, _to(lambda dtype: torch.float64))


def _upcast(value):
    import torch

    return _map(value, _to(lambda dtype: torch.float32 if str(dtype).split(".")[-1] in LOW_PRECISION else dtype))


def _attribute(gm, target: str):
    value = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _clone(value):
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def evaluate(gm, inputs: list, judge: bool = False, skip: set[str] = frozenset()) -> dict[str, object]:
    """Node name -> value, for every node of `gm` run eagerly on `inputs` (copied first: the
    graph may mutate them); `judge`: in float64. Nodes in `skip` (and what needs them) get none."""
    import torch
    from torch.fx.node import map_arg

    env: dict[str, object] = {}
    placeholders = iter(inputs)
    missing = object()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = _clone(next(placeholders, None))
            env[node.name] = _fp64(value) if judge else value
        elif node.op == "get_attr":
            value = _attribute(gm, node.target)
            env[node.name] = _fp64(value) if judge else value
        elif node.op == "call_function":
            if node.name in skip or any(env.get(n.name, missing) is missing for n in node.all_input_nodes):
                continue
            args = map_arg(node.args, lambda n: env[n.name])
            kwargs = map_arg(node.kwargs, lambda n: env[n.name])
            if judge:
                args, kwargs = _fp64(args), _fp64(kwargs)
            try:
                with torch.no_grad():
                    env[node.name] = node.target(*args, **kwargs)
            except Exception:  # noqa: BLE001 - an op eager cannot run here: no reference for it
                continue
    return env


def kernel_precision(gm, kernel_nodes: list[str], eager: dict[str, object]) -> dict[str, object]:
    """The values of a kernel's fused nodes as the kernel computes them (float32 for
    float16/bfloat16), from eager's values of everything outside the kernel."""
    import torch
    from torch.fx.node import map_arg

    inside = set(kernel_nodes)
    values: dict[str, object] = {}

    def value_of(node):
        if node.name in values:
            return values[node.name]
        return _upcast(eager[node.name])

    for node in gm.graph.nodes:
        if node.op != "call_function" or node.name not in inside:
            continue
        if any(n.name not in values and n.name not in eager for n in node.all_input_nodes):
            continue
        args = _upcast(map_arg(node.args, value_of))
        kwargs = _upcast(map_arg(node.kwargs, value_of))
        try:
            with torch.no_grad():
                values[node.name] = node.target(*args, **kwargs)
        except Exception:  # noqa: BLE001 - as in evaluate
            continue
    return values
