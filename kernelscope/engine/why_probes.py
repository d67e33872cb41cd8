"""Why it recompiled, why it was not fused: the two things torch's records leave out (docs/why.md).

Guards and recompile reasons come from the structured trace (compile_text/guards.py); two
facts do not, and two small hooks (patch points under "why") record them:
- every fusion Inductor's scheduler refuses (`WhyNoFuse`, what `TORCH_LOGS=fusion` prints
  as "cannot fuse op5 with op6: no shared data"), with the post-grad nodes each scheduler
  node computes, so the refusal can be told in model lines and kernels;
- the values a call had when a cached compile's guard failed (`x.size()[0]` was 8), read
  from the frame's locals while Dynamo explains the failure.

A group whose point does not hold on this torch is left out and said in the run's warnings;
nothing here can fail a compile (an error in a hook is recorded, never raised).
"""
from __future__ import annotations

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
        self.disabled: list[str] = []
        self.errors: list[str] = []
        self._patches = Patches()
        # id(WhyNoFuse) -> its two scheduler nodes (WhyNoFuse has slots: no attribute of
        # ours fits on it). One is made per fusion asked about: the latest few are kept.
        self._nodes_of: OrderedDict[int, tuple] = OrderedDict()

    def __enter__(self):
        self.disabled += install_groups(self._patches, {
            "fusion_reasons": [(points.WHY_NO_FUSE_INIT, self._wrap_init), (points.WHY_NO_FUSE_CALL, self._wrap_call)],
            "guard_failure_values": [(points.GUARD_FAIL_REASON, self._wrap_fail_reason)],
        })
        return self

    def __exit__(self, *exc):
        self._patches.restore()

    def warnings(self) -> list[str]:
        lines = [f"why: not recorded on this torch ({line})" for line in self.disabled]
        return lines + [f"why: a hook failed and was skipped: {error.splitlines()[0]}" for error in self.errors[:3]]

    def _guarded(self, fn: Callable, *args) -> None:
        try:
            fn(*args)
        except Exception:
            self.errors.append(traceback.format_exc(limit=3))

    # -- fusion refusals -----------------------------------------------------------------

    def _wrap_init(self, original):
        nodes_of = self._nodes_of

        def __init__(why, node1, node2, *args, **kwargs):
            original(why, node1, node2, *args, **kwargs)
            nodes_of[id(why)] = (node1, node2)
            nodes_of.move_to_end(id(why))
            if len(nodes_of) > 64:
                nodes_of.popitem(last=False)

        return __init__

    def _wrap_call(self, original):
        probes = self

        def __call__(why, reason, *args, **kwargs):
            result = original(why, reason, *args, **kwargs)
            probes._guarded(probes._record_refusal, why, reason, args)
            return result

        return __call__

    def _record_refusal(self, why, reason: str, args: tuple) -> None:
        capture = self.current_graph()
        nodes = self._nodes_of.get(id(why))
        if capture is None or nodes is None:
            return
        text = reason % args if args else reason
        key = (why.name1, why.name2, text)
        if key not in capture.not_fused:  # each round of fusion asks again: keep the first
            capture.not_fused[key] = (_origins(nodes[0]), _origins(nodes[1]))

    # -- guard failures --------------------------------------------------------------------

    def _wrap_fail_reason(self, original):
        probes = self

        def get_guard_fail_reason_helper(guard_manager, f_locals, *args, **kwargs):
            reason = original(guard_manager, f_locals, *args, **kwargs)
            probes._guarded(probes._record_values, reason, f_locals)
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


def _origins(snode) -> list[str]:
    """The post-grad nodes a scheduler node computes (fused ones: each part's), in graph order."""
    origins = [origin for inner in snode.get_nodes() if getattr(inner, "node", None) is not None
               for origin in inner.node.get_origins()]
    return list(dict.fromkeys(origin.name for origin in sorted(origins)))
