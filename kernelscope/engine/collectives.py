"""The collectives of a post-grad graph, each with why it is there.

Tensor parallelism (DTensor) traces its communication into the graph as torch's
functional collectives (`_c10d_functional.all_gather_into_tensor`,
`reduce_scatter_tensor`, `all_reduce`, and `wait_tensor` for each), and Inductor
emits them in the wrapper. For each such node this module says:
- what it does: op, role (issue / wait / fused), process group and its size,
  reduction, bytes, and which wait belongs to which collective;
- what issued it, from the node's whole stack trace (torch's frames included): a
  ParallelStyle's input/output hook (`RowwiseParallel output`, the class read from the
  source of the frame's file), a DTensor call (`DTensor.redistribute`), or, with no
  torch frame below the model line, DTensor's sharding propagation of the op on that
  line (an implicit redistribution);
- the DTensor placements it changed (`P(sum) -> R`), from the pre-grad graph.
The model line and the module instance are the node's own (FxNode.source,
FxNode.module_path); which passes moved or fused it is its pass lineage.
"""
from __future__ import annotations

import ast
import functools
import os

from kernelscope.compile_text.stack_traces import parse_frames
from kernelscope.engine import fx_nodes
from kernelscope.engine.distributed_probes import is_collective_target
from kernelscope.run_record import Collective, FxNode, PassStep, SourceLocation

_HOOK_WORDS = (("input", "input"), ("output", "output"), ("partition", "parameters"))
_DTENSOR_CALLS = ("redistribute", "full_tensor", "from_local", "to_local")


def graph_collectives(gm, nodes: list[FxNode], pre_grad_nodes: list[dict] | None,
                      group_sizes: dict[str, int], backward: bool = False) -> list[Collective]:
    """Every communicating node of the post-grad module `gm`, in graph order. In a
    backward graph each says which forward communication it is the gradient of."""
    records = {node.name: node for node in nodes}
    pre = {node["name"]: node for node in pre_grad_nodes or ()}
    torch_dir = fx_nodes.skip_prefixes()
    found = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or not is_collective_target(node.target):
            continue
        op = _op_name(node.target)
        arguments = _arguments(node)
        group = str(arguments.get("group_name", arguments.get("tag", "")) or "")
        size = arguments.get("group_size")
        collective = Collective(
            node=node.name,
            op=op,
            role=_role(node.target, op),
            group=group,
            group_size=int(size) if isinstance(size, int) else group_sizes.get(group),
            reduce_op=str(arguments.get("reduce_op", arguments.get("reduceOp", "")) or ""),
            bytes=_bytes(node.meta.get("val")),
        )
        collective.peers = _peers(node, collective.role)
        record = records.get(node.name)
        _issued_by(collective, node.meta.get("stack_trace"), torch_dir, record, pre)
        if backward and collective.issued_by:  # the forward's communication, differentiated
            collective.issued_by = f"gradient of {collective.issued_by}"
        found.append(collective)
    issued = {collective.node: collective for collective in found if collective.role != "wait"}
    for wait in (collective for collective in found if collective.role == "wait"):
        peer = next((issued[name] for name in wait.peers if name in issued), None)
        if peer is not None:  # a wait is on its collective's group
            wait.group, wait.group_size, wait.reduce_op = peer.group, peer.group_size, peer.reduce_op
            wait.redistribute = wait.redistribute or peer.redistribute
    return found


def add_moves(nodes: list[FxNode], pass_moves: dict[str, list[tuple[str, str, int]]],
              scheduler_moves: dict[str, tuple[str, int]], scheduler_passes: list[str]) -> None:
    """Put the passes that moved a collective into its pass lineage (latest first):
    post-grad passes seen moving it, then the scheduler's order in the wrapper."""
    for node in nodes:
        steps = [PassStep(name, f"moved {direction} past {count} op(s)", "")
                 for name, direction, count in pass_moves.get(node.name, ())]
        if node.name in scheduler_moves:
            direction, count = scheduler_moves[node.name]
            who = "; ".join(scheduler_passes) or "fusion and ordering"
            steps.append(PassStep(f"Inductor scheduler ({who})", f"moved {direction} past {count} op(s)", ""))
        if steps:
            node.lineage = list(reversed(steps)) + node.lineage


def scheduler_moves(gm, wrapper_regions: list[tuple[int, list[str], list[str]]]) -> dict[str, tuple[str, int]]:
    """Collectives the scheduler placed among other ops differently from the post-grad
    graph: name -> ("earlier" | "later", ops passed), from each node's first wrapper region."""
    first_line: dict[str, int] = {}
    for line, _origins, computes in sorted(wrapper_regions):
        for name in computes:
            first_line.setdefault(name, line)
    graph_order = [(node.name, is_collective_target(node.target)) for node in gm.graph.nodes
                   if node.op == "call_function" and node.name in first_line]
    if not any(communicates for _name, communicates in graph_order):
        return {}
    wrapper_order = sorted(graph_order, key=lambda item: first_line[item[0]])

    def preceding(order) -> dict[str, int]:
        counts, seen = {}, 0
        for name, communicates in order:
            if communicates:
                counts[name] = seen
            else:
                seen += 1
        return counts

    was, now = preceding(graph_order), preceding(wrapper_order)
    return {name: ("later" if now[name] > was[name] else "earlier", abs(now[name] - was[name]))
            for name in was if now[name] != was[name]}


# -- what the op is --------------------------------------------------------------------


def _op_name(target) -> str:
    packet = getattr(getattr(target, "overloadpacket", None), "__name__", None) or str(target).split(".")[-2]
    name = packet.removesuffix("_out").rstrip("_")
    return name


def _role(target, op: str) -> str:
    if op == "wait_tensor":
        return "wait"
    if getattr(target, "namespace", "") == "symm_mem" and op.startswith("fused_"):
        return "fused"
    return "issue"


def _arguments(node) -> dict:
    """The node's arguments by schema name (positional and keyword)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return dict(node.kwargs)
    named = {argument.name: value for argument, value in zip(schema.arguments, node.args)}
    named.update(node.kwargs)
    return named


def _bytes(value) -> int | None:
    import torch

    if isinstance(value, torch.Tensor):
        try:
            return int(value.numel()) * value.element_size()
        except (TypeError, RuntimeError):  # symbolic sizes
            return None
    if isinstance(value, (list, tuple)):
        sizes = [_bytes(item) for item in value]
        return None if any(size is None for size in sizes) or not sizes else sum(sizes)
    return None


def _peers(node, role: str) -> list[str]:
    """issue: the waits on its result; wait: the collectives it waits on."""
    import operator

    if role == "wait":
        found = []
        for source in node.all_input_nodes:
            while source.op == "call_function" and source.target is operator.getitem:
                source = source.args[0]
            if is_collective_target(source.target) and source.name not in found:
                found.append(source.name)
        return found
    waits, pending = [], list(node.users)
    while pending:
        user = pending.pop(0)
        if user.op == "call_function" and user.target is operator.getitem:
            pending.extend(user.users)
        elif user.op == "call_function" and _op_name(user.target) == "wait_tensor" \
                and is_collective_target(user.target) and user.name not in waits:
            waits.append(user.name)
    return waits


# -- why it is there -----------------------------------------------------------------------


def _issued_by(collective: Collective, stack_trace: str | None, torch_dir: tuple[str, ...],
               record: FxNode | None, pre: dict[str, dict]) -> None:
    frames = parse_frames(stack_trace)
    last_user = max((index for index, frame in enumerate(frames) if not frame.file.startswith(torch_dir)),
                    default=-1)
    user, below = frames[:last_user + 1], frames[last_user + 1:]  # below: torch's hooks, DTensor API
    pre_node = next((pre[name] for name in (record.from_pre_grad if record else ()) if name in pre), None)
    collective.redistribute = _redistribution(pre_node, pre)
    collective.model_line = record.source if record is not None else (user[-1] if user else None)
    for frame in reversed(below):
        cls = _enclosing_class(frame.file, frame.line)
        if cls and _is_parallel_style(frame.file, cls):
            hook = next((what for word, what in _HOOK_WORDS if word in frame.function), frame.function)
            collective.issued_by, collective.style, collective.frame = f"{cls} {hook}", cls, _short(frame)
            return
    for frame in reversed(below):
        if f"{os.sep}distributed{os.sep}" in frame.file:
            cls = _enclosing_class(frame.file, frame.line)
            collective.issued_by = f"{cls}.{frame.function}" if cls else frame.function
            collective.frame = _short(frame)
            return
    target = pre_node["target"] if pre_node else ""
    explicit = next((call for call in _DTENSOR_CALLS if target.endswith(call)), None)
    if explicit and user and user[-1].function != "forward":
        # A helper outside torch called DTensor itself (torchtitan's module wrapper: not a
        # module's forward): the model line is the innermost line outside the helper's file.
        helper = user[-1]
        collective.issued_by = f"DTensor.{explicit} in {helper.function}"
        collective.frame = helper
        outside = [frame for frame in user if frame.file != helper.file]
        if outside:
            collective.model_line = outside[-1]
    elif explicit:
        collective.issued_by = f"DTensor.{explicit}"
    elif pre_node and pre_node.get("placements"):
        collective.issued_by = f"implicit: DTensor sharding of {target}"
    elif target:
        collective.issued_by = target


def _redistribution(pre_node: dict | None, pre: dict[str, dict]) -> str:
    if not pre_node or not pre_node.get("placements"):
        return ""
    inputs = [pre[name]["placements"] for name in pre_node.get("inputs", ()) if pre.get(name, {}).get("placements")]
    if not inputs:
        return ""
    before = inputs[0] if len(inputs) == 1 else "; ".join(f"({placements})" for placements in inputs)
    return f"{before} -> {pre_node['placements']}"


def _short(frame: SourceLocation) -> SourceLocation:
    """A torch frame with its path from `torch/` on (the same on every machine)."""
    marker = f"{os.sep}torch{os.sep}"
    file = frame.file
    if marker in file:
        file = "torch/" + file.rsplit(marker, 1)[1].replace(os.sep, "/")
    return SourceLocation(file=file, line=frame.line, function=frame.function, code=frame.code)


@functools.lru_cache(maxsize=64)
def _classes_of(path: str) -> tuple[tuple[str, int, int], ...]:
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((node.name, node.lineno, node.end_lineno or node.lineno)
                 for node in ast.walk(tree) if isinstance(node, ast.ClassDef))


def _enclosing_class(path: str, line: int) -> str:
    """The innermost class whose body holds `path:line`, "" if none."""
    enclosing = [(start, name) for name, start, end in _classes_of(path) if start <= line <= end]
    return max(enclosing)[1] if enclosing else ""


def _is_parallel_style(path: str, cls: str) -> bool:
    if not path.replace(os.sep, "/").endswith("torch/distributed/tensor/parallel/style.py"):
        return False
    from torch.distributed.tensor.parallel import style

    found = getattr(style, cls, None)
    return isinstance(found, type) and issubclass(found, style.ParallelStyle)
