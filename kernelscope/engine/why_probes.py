"""Why it recompiled, why it was not fused: the two things torch's records leave out (docs/why.md).

Guards and recompile reasons come from the structured trace (compile_text/guards.py); three
facts do not, and small hooks (patch points under "why") record them:
- every fusion Inductor's scheduler refuses (`WhyNoFuse`, what `TORCH_LOGS=fusion` prints
  as "cannot fuse op5 with op6: no shared data"), with the post-grad nodes each scheduler
  node computes, so the refusal can be told in model lines and kernels;
- each value Inductor's lowering stores in a buffer by its heuristics instead of computing
  it inside its users' loops (`StorageBox.mark_reuse`: several users; `realize_hint`: too
  many reads, or a user that needs its input in memory), with the heuristic's numbers;
- the values a call had when a cached compile's guard failed (`x.size()[0]` was 8), read
  from the frame's locals while Dynamo explains the failure.

A group whose point does not hold on this torch is left out and said in the run's warnings;
nothing here can fail a compile (an error in a hook is recorded, never raised).
"""
from __future__ import annotations

import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import Patches, install_groups


class WhyProbes:
    """Install the "why" hooks for one recording; collect what they see.

    `current_graph` answers the probes' GraphCapture being generated (or None): a refusal
    is kept on it (`capture.not_fused`)."""

    def __init__(self, current_graph: Callable[[], Any]):
        self.current_graph = current_graph
        self.failure_values: dict[str, dict[str, str]] = {}  # failure text -> {source: value}
        # id(post-grad graph module) -> {post-grad node: why Inductor stored its value in a buffer}
        self.realized: dict[int, dict[str, str]] = {}
        self.disabled: list[str] = []
        self.errors: list[str] = []
        # The hooks' own time (their work after torch's call returns) and how often torch
        # called them: what bench/why_cost.py reports as the capture's cost.
        self.seconds = 0.0
        self.calls = 0
        self._patches = Patches()
        # id(WhyNoFuse) -> its two scheduler nodes (WhyNoFuse has slots: no attribute of
        # ours fits on it). One is made per fusion asked about: the latest few are kept.
        self._nodes_of: OrderedDict[int, tuple] = OrderedDict()

    def __enter__(self):
        self.disabled += install_groups(self._patches, {
            "fusion_reasons": [(points.WHY_NO_FUSE_INIT, self._wrap_init), (points.WHY_NO_FUSE_CALL, self._wrap_call)],
            "realized_buffers": [(points.REALIZE_ON_REUSE, self._wrap_mark_reuse),
                                 (points.REALIZE_HINT, self._wrap_realize_hint)],
            "guard_failure_values": [(points.GUARD_FAIL_REASON, self._wrap_fail_reason)],
        })
        return self

    def __exit__(self, *exc):
        self._patches.restore()

    def warnings(self) -> list[str]:
        lines = [f"why: not recorded on this torch ({line})" for line in self.disabled]
        return lines + [f"why: a hook failed and was skipped: {error.splitlines()[0]}" for error in self.errors[:3]]

    def _spent(self, began: float) -> None:
        self.seconds += time.perf_counter() - began
        self.calls += 1

    def _guarded(self, fn: Callable, *args) -> None:
        try:
            fn(*args)
        except Exception:
            self.errors.append(traceback.format_exc(limit=3))

    # -- fusion refusals -----------------------------------------------------------------

    def _wrap_init(self, original):
        nodes_of = self._nodes_of

        probes = self

        def __init__(why, node1, node2, *args, **kwargs):
            original(why, node1, node2, *args, **kwargs)
            began = time.perf_counter()
            nodes_of[id(why)] = (node1, node2)
            nodes_of.move_to_end(id(why))
            if len(nodes_of) > 64:
                nodes_of.popitem(last=False)
            probes._spent(began)

        return __init__

    def _wrap_call(self, original):
        probes = self

        def __call__(why, reason, *args, **kwargs):
            result = original(why, reason, *args, **kwargs)
            began = time.perf_counter()
            probes._guarded(probes._record_refusal, why, reason, args)
            probes._spent(began)
            return result

        return __call__

    def _record_refusal(self, why, reason: str, args: tuple) -> None:
        capture = self.current_graph()
        nodes = self._nodes_of.get(id(why))
        if capture is None or nodes is None:
            return
        text = reason % args if args else reason
        if text == "template epilogue not satisfied":
            text += f" ({_epilogue_refused(*nodes)})"
        key = (why.name1, why.name2, text)
        if key not in capture.not_fused:  # each round of fusion asks again: keep the first
            capture.not_fused[key] = (_origins(nodes[0]), _origins(nodes[1]), _refusal_cause(*nodes))

    # -- buffers the lowering realized -------------------------------------------------------

    def _wrap_mark_reuse(self, original):
        probes = self

        def mark_reuse(box, users, *args, **kwargs):
            before = box.data
            original(box, users, *args, **kwargs)
            began = time.perf_counter()
            if box.data is not before:  # realized: a ComputedBuffer now holds `before`
                probes._guarded(probes._record_realized, before, lambda: _reuse_reason(before, users))
            probes._spent(began)

        return mark_reuse

    def _wrap_realize_hint(self, original):
        probes = self

        def realize_hint(box, *args, **kwargs):
            before = box.data
            original(box, *args, **kwargs)
            began = time.perf_counter()
            if box.data is not before:
                probes._guarded(probes._record_realized, before, lambda: _hint_reason(before))
            probes._spent(began)

        return realize_hint

    def _record_realized(self, loops, reason: Callable[[], str]) -> None:
        """Keep why the node being lowered got a buffer of its own (the reason is worked out
        only here: realizing is rare next to the calls that decide against it)."""
        from torch._inductor.virtualized import V

        node = V.graph.current_node if V.graph is not None else None
        if node is None or type(loops).__name__ not in ("Pointwise", "Reduction"):
            return
        self.realized.setdefault(id(V.graph.module), {}).setdefault(node.name, reason())

    # -- guard failures --------------------------------------------------------------------

    def _wrap_fail_reason(self, original):
        probes = self

        def get_guard_fail_reason_helper(guard_manager, f_locals, *args, **kwargs):
            reason = original(guard_manager, f_locals, *args, **kwargs)
            began = time.perf_counter()
            probes._guarded(probes._record_values, reason, f_locals)
            probes._spent(began)
            return reason

        return get_guard_fail_reason_helper

    def _record_values(self, reason: str, f_locals: dict) -> None:
        from kernelscope.compile_text.guards import sources_in

        values: dict[str, str] = {}
        for name, kind, dim in sources_in(reason):
            tensor = f_locals.get(name)
            if tensor is not None and hasattr(tensor, kind):
                values[f"{name}.{kind}()[{dim}]"] = str(getattr(tensor, kind)()[dim])
        for name, value in f_locals.items():  # plain Python values a guard may name (`n == 3`)
            if isinstance(value, (int, float, bool, str)) and f" {name} " in f" {reason} ".replace("(", " "):
                values[name] = repr(value)
        self.failure_values[reason.strip()] = values


def _refusal_cause(node1, node2) -> str:
    """A refusal about a template's epilogue or prologue, about an extern call, or the
    scheduler's own rules for two generated kernels."""
    if node1.is_template() or node2.is_template():
        return "template"
    if node1.is_extern() or node2.is_extern():
        return "extern"
    return "scheduler"


def _epilogue_refused(template, epilogue) -> str:
    """Which of the scheduler's conditions for a template epilogue failed, in words."""
    from torch._inductor import config

    if not template.is_template():
        return "the template is the second node"
    if epilogue.is_reduction():
        return "the epilogue is a reduction: a template's epilogue takes pointwise ops only"
    if epilogue.has_aliasing_or_mutation():
        return "the epilogue mutates or aliases a buffer"
    if not config.epilogue_fusion:
        return "config.epilogue_fusion is off"
    return "epilogue fusion is off for this template"


def _config(name: str, fallback: str):
    """An Inductor threshold: the config's value, or its device default where it is None."""
    from torch._inductor import config

    value = getattr(config, name, None)
    return value if value is not None else getattr(config, fallback, None)


def _reuse_reason(loops, users: int) -> str:
    """Why `StorageBox.mark_reuse` stored a value several ops use (its own heuristics)."""
    cpu = getattr(loops.get_device(), "type", "") == "cpu"
    opcount = loops.inner_fn_opcount()
    heavy = sorted({"exp", "log", "log10", "log1p", "log2", "sigmoid", "tanh"} & set(opcount.used_ops))
    if cpu and heavy:
        why = f"it computes {', '.join(heavy)} (heavy on the CPU: Inductor computes it once)"
    elif loops.has_large_inner_fn():
        limit = _config("realize_opcount_threshold", "realize_cpu_opcount_threshold" if cpu
                        else "_realize_opcount_threshold_default")
        why = f"its computation has {opcount.num_ops} ops (over config.realize_opcount_threshold={limit})"
    else:
        why = (f"it reads {loops.num_reads()} buffers "
               f"(over config.realize_reads_threshold={_config('realize_reads_threshold', '')})")
    return f"stored in a buffer, not recomputed in each of its {users} users: {why}"


def _hint_reason(loops) -> str:
    """Why `StorageBox.realize_hint` stored a value: a user that needs it in memory, else
    the reads it had accumulated."""
    from torch._inductor.lowering import needs_realized_inputs
    from torch._inductor.virtualized import V

    node = V.graph.current_node
    needing = sorted({str(user.target) for user in node.users if user.target in needs_realized_inputs})
    if needing:
        return f"stored in a buffer: its user {needing[0]} reads its inputs from memory"
    cpu = getattr(loops.get_device(), "type", "") == "cpu"
    limit = _config("realize_acc_reads_threshold", "realize_cpu_acc_reads_threshold" if cpu
                    else "_realize_acc_reads_threshold_default")
    if limit is not None and loops.num_reads() > limit:
        return (f"stored in a buffer: it had accumulated {loops.num_reads()} reads "
                f"(over config.realize_acc_reads_threshold={limit}), too many to inline into its users")
    if loops.has_large_inner_fn():
        return "stored in a buffer: its computation is too large to inline into its users (realize_opcount_threshold)"
    return "stored in a buffer on a lowering's hint (realize_hint: it reads more than one buffer)"


def _origins(snode) -> list[str]:
    """The post-grad nodes a scheduler node computes (fused ones: each part's), in graph order."""
    origins = [origin for inner in snode.get_nodes() if getattr(inner, "node", None) is not None
               for origin in inner.node.get_origins()]
    return list(dict.fromkeys(origin.name for origin in sorted(origins)))
