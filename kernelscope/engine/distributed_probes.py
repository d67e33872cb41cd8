"""Probes for distributed programs: DDP's graph splits, passes that move or fuse
collectives, and the rank, seen while torch.compile runs.

Like `probes.Probes`, the probes are installed through engine/patching.py (their patch
points are declared in patch_points.py, "distributed"); a group whose point changed on
this torch switches off (the run says so) and the compile goes on.

- ddp_splits        torch._dynamo.backends.distributed: `pretty_print_buckets` sees
                    DDPOptimizer's buckets, `SubmodCompiler.run_node` which split part
                    (submod_<i>) is being compiled; each graph generated meanwhile is that
                    part (a backward compiled later takes its forward's part, by Inductor's
                    graph id)
- collective_moves  GraphTransformObserver.apply_graph_pass / apply_gm_pass: a post-grad
                    pass that reorders a graph with collectives (overlap scheduling,
                    bucketing) is named on each collective it moved past other ops
- async_tp_lineage  post_grad.micro_pipeline_tp_pass (async TP) runs inside a
                    GraphTransformObserver, so the fused all-gather/reduce-scatter matmuls
                    it makes carry its name in their pass lineage as other passes' nodes do
- graph_facts       GraphLowering.codegen: each generated graph's split part, graph id and
                    the scheduler's reordering settings; the rank, while the process group
                    is alive
"""
from __future__ import annotations

import re
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from kernelscope.engine import patch_points as points
from kernelscope.engine import rank_info
from kernelscope.engine.patching import Patches, install_groups
from kernelscope.run_record import GraphSplit, RankInfo

# Namespaces of the ops that communicate (functional collectives and their waits,
# symmetric-memory fused ops, DTensor's own, the in-place c10d ops).
COLLECTIVE_NAMESPACES = ("_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "symm_mem",
                         "_dtensor", "c10d")


def is_collective_target(target) -> bool:
    """Whether an FX node target (an op overload, or its printed name) communicates."""
    namespace = getattr(target, "namespace", None)
    if namespace is None:
        text = str(target).removeprefix("torch.ops.").removeprefix("torch._ops.")
        namespace = text.split(".", 1)[0]
    return namespace in COLLECTIVE_NAMESPACES


@dataclass
class GraphFacts:
    """What the probes saw about one generated graph (keyed by its post-grad module)."""

    graph_id: int | None  # Inductor's id: the forward and backward of one compile share it
    is_backward: bool
    split: GraphSplit | None
    scheduler_passes: list[str] = field(default_factory=list)  # reorder_for_compute_comm_overlap


_local = threading.local()


class DistributedProbes:
    """Install the probes of this module for one recording; collect what they see."""

    def __init__(self, job: str | None = None):
        self.job = job
        self.rank: RankInfo | None = None
        self.disabled: list[str] = []
        self.errors: list[str] = []
        # post-grad module id -> {collective node name: [(pass, "earlier"/"later", ops passed)]}
        self.moves: dict[int, dict[str, list[tuple[str, str, int]]]] = {}
        self._facts: dict[int, GraphFacts] = {}
        self.group_sizes: dict[str, int] = {}  # process-group name -> size, while the groups exist
        self._buckets: list[tuple[int, list[str]]] = []  # (bytes, params) of the split being compiled
        self._bucket_cap = 0
        self._patches = Patches()

    # -- install ---------------------------------------------------------------

    def __enter__(self):
        # keep_signature: the line-level probes, installed next, check the same signatures
        self.disabled += install_groups(self._patches, self._probe_groups(), keep_signature=True)
        return self

    def __exit__(self, *exc):
        self._patches.restore()

    def _probe_groups(self) -> dict:
        return {
            "ddp_splits": [(points.DDP_BUCKETS, self._wrap_buckets), (points.DDP_SUBMOD, self._wrap_submod)],
            "collective_moves": [(points.OBSERVED_GRAPH_PASS, self._wrap_observed_pass),
                                 (points.OBSERVED_GM_PASS, self._wrap_observed_pass)],
            "async_tp_lineage": [(points.MICRO_PIPELINE_TP, self._wrap_micro_pipeline_tp)],
            "graph_facts": [(points.DISTRIBUTED_CODEGEN, self._wrap_codegen)],
        }

    def _guarded(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - a probe never breaks a compile
            self.errors.append(f"{what}: {traceback.format_exc(limit=3)}")
            return None

    # -- what the recorder asks ------------------------------------------------------

    def split_of(self, post_grad_gm) -> GraphSplit | None:
        facts = self._facts.get(id(post_grad_gm))
        if facts is None:
            return None
        if facts.split is None and facts.is_backward and facts.graph_id is not None:
            twin = next((other for other in self._facts.values()
                         if other.graph_id == facts.graph_id and not other.is_backward), None)
            return twin.split if twin is not None else None
        return facts.split

    def scheduler_passes_of(self, post_grad_gm) -> list[str]:
        facts = self._facts.get(id(post_grad_gm))
        return list(facts.scheduler_passes) if facts is not None else []

    def moves_of(self, post_grad_gm) -> dict[str, list[tuple[str, str, int]]]:
        return self.moves.get(id(post_grad_gm), {})

    # -- DDP's splits ----------------------------------------------------------------

    def _wrap_buckets(self, original):
        probes = self

        def pretty_print_buckets(buckets, bucket_bytes_cap, *args, **kwargs):
            probes._buckets = [(int(bucket.size), [_parameter_path(name) for name in bucket.params])
                               for bucket in buckets]
            probes._bucket_cap = int(bucket_bytes_cap)
            return original(buckets, bucket_bytes_cap, *args, **kwargs)

        return pretty_print_buckets

    def _wrap_submod(self, original):
        probes = self

        def run_node(compiler, n, *args, **kwargs):
            part = _split_part(n) if probes._buckets else None
            if part is None or part >= len(probes._buckets):
                return original(compiler, n, *args, **kwargs)
            size, params = probes._buckets[part]
            previous = getattr(_local, "split", None)
            _local.split = GraphSplit(part=part, parts=len(probes._buckets), params=params,
                                      bucket_bytes=size, cap_bytes=probes._bucket_cap)
            try:
                return original(compiler, n, *args, **kwargs)
            finally:
                _local.split = previous

        return run_node

    # -- passes that move collectives ------------------------------------------------------

    def _wrap_observed_pass(self, original):
        probes = self

        def apply_pass(observer, pass_fn, *args, **kwargs):
            gm = getattr(observer, "gm", None)
            before = probes._guarded("collective_moves", _order, gm)
            result = original(observer, pass_fn, *args, **kwargs)
            if before:
                probes._guarded("collective_moves", probes._note_moves, gm, observer.passname, before)
            return result

        return apply_pass

    def _note_moves(self, gm, pass_name: str, before: list) -> None:
        after = _order(gm)
        for name, direction, passed in _moved(before, after):
            self.moves.setdefault(id(gm), {}).setdefault(name, []).append((pass_name, direction, passed))

    def _wrap_micro_pipeline_tp(self, original):
        def micro_pipeline_tp_pass(graph, *args, **kwargs):
            from torch.fx.passes.graph_transform_observer import GraphTransformObserver

            gm = graph.owning_module
            if gm is None:
                return original(graph, *args, **kwargs)
            return GraphTransformObserver(gm, "micro_pipeline_tp_pass").apply_graph_pass(
                lambda observed: original(observed, *args, **kwargs))

        return micro_pipeline_tp_pass

    # -- each generated graph ---------------------------------------------------------------

    def _wrap_codegen(self, original):
        probes = self

        def codegen(graph_lowering, *args, **kwargs):
            probes._guarded("graph_facts", probes._note_graph, graph_lowering)
            return original(graph_lowering, *args, **kwargs)

        return codegen

    def _note_graph(self, graph_lowering) -> None:
        import torch._inductor.config as inductor_config

        passes = []
        if inductor_config.reorder_for_compute_comm_overlap:
            passes = [getattr(p, "__name__", str(p)) for p in inductor_config.reorder_for_compute_comm_overlap_passes]
            passes = [f"reorder_for_compute_comm_overlap: {', '.join(passes)}" if passes
                      else "reorder_for_compute_comm_overlap"]
        self._facts[id(graph_lowering.module)] = GraphFacts(
            graph_id=getattr(graph_lowering, "graph_id", None),
            is_backward=bool(getattr(graph_lowering, "is_backward", False)),
            split=getattr(_local, "split", None),
            scheduler_passes=passes,
        )
        if self.rank is None:
            self.rank = rank_info.current(self.job)
        self._note_group_sizes(graph_lowering.module)

    def _note_group_sizes(self, gm) -> None:
        from torch.distributed import distributed_c10d

        for node in gm.graph.nodes:
            if node.op != "call_function" or not is_collective_target(node.target):
                continue
            for value in list(node.args) + list(node.kwargs.values()):
                if isinstance(value, str) and value not in self.group_sizes:
                    try:
                        self.group_sizes[value] = int(distributed_c10d._get_group_size_by_name(value))
                    except Exception:  # noqa: BLE001 - not a group name (a reduce op), or gone
                        pass


_DYNAMO_PATH = re.compile(r"_(?:modules|parameters|buffers)_")


def _parameter_path(name: str) -> str:
    """Dynamo's placeholder name of a parameter as its path in the model:
    `L_self_modules_layers_modules_0_parameters_weight_` -> `layers.0.weight`."""
    if not name.startswith("L_self_"):
        return name
    parts = _DYNAMO_PATH.split("_" + name.removeprefix("L_self_").rstrip("_"))
    return ".".join(part for part in parts if part) or name


def _split_part(node) -> int | None:
    target = str(getattr(node, "target", ""))
    if getattr(node, "op", "") != "call_module" or not target.startswith("submod_"):
        return None
    suffix = target.removeprefix("submod_")
    return int(suffix) if suffix.isdigit() else None


def _order(gm) -> list[tuple[Any, bool, str]] | None:
    """The graph's ops in order as (node, communicates, name); None if none communicates."""
    graph = getattr(gm, "graph", None)
    if graph is None:
        return None
    ops = [(node, is_collective_target(node.target), node.name)
           for node in graph.nodes if node.op == "call_function"]
    return ops if any(communicates for _node, communicates, _name in ops) else None


def _moved(before: list, after: list) -> list[tuple[str, str, int]]:
    """Collectives whose place among the other ops (those in both orders) changed:
    (name, "earlier" | "later", how many ops it passed)."""
    kept = {id(node) for node, _c, _n in before} & {id(node) for node, _c, _n in after}

    def preceding(order) -> dict[int, int]:
        counts, seen = {}, 0
        for node, communicates, _name in order:
            if id(node) not in kept:
                continue
            if communicates:
                counts[id(node)] = seen
            else:
                seen += 1
        return counts

    was, now = preceding(before), preceding(after)
    moved = []
    for node, communicates, _name in after:
        if communicates and id(node) in was and id(node) in now and was[id(node)] != now[id(node)]:
            difference = now[id(node)] - was[id(node)]
            moved.append((node.name, "later" if difference > 0 else "earlier", abs(difference)))
    return moved
