"""max-autotune's decisions: which GEMM/convolution choice (ATen, a Triton template
config, ...) is fastest, and whether a fusion with a template pays, both answered by
timing on the GPU.

- Choices: every timing of select_algorithm passes through its cache lookup,
  `PersistentCache.lookup(choices, op, inputs_key, benchmark)`; recorded there with
  its key and each choice's time, and replayed there (the recorded time of each choice
  goes back to Inductor, which then chooses, defers to fusion benchmarks and falls back
  exactly as it does on the GPU).
- Fusion benchmarks (`benchmark_epilogue_fusion`, `benchmark_fusion`): every kernel the
  scheduler times goes through `TritonScheduling.benchmark_codegened_module(module)`;
  recorded there by the module's code and its time, and replayed there.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

from kernelscope.decisions.keys import module_key
from kernelscope.engine import patch_points as points
from kernelscope.engine.decision_hooks import inductor_keys
from kernelscope.engine.decision_hooks.log import DecisionLog, fastest
from kernelscope.engine.patching import Patches
from kernelscope.run_record import Decision

GUESS_CHOICE_RULE = ("nothing timed: every choice taken as equally fast, so Inductor keeps its first ({first}), "
                     "as its deterministic mode picks the first ATen choice")
GUESS_FUSION_RULE = ("not timed: taken as 0 ms, which leaves the kernels unfused where Inductor weighs the fusion "
                     "by these times")


def _inductor_class(log: DecisionLog, point, decisions: str):
    """The class that holds patch point `point` where it holds on this torch; else None, and
    the log says which decisions are off and why."""
    import torch

    problem = point.check()
    if problem:
        log.problems.append(f"{decisions} decisions off on torch {torch.__version__}: {problem}")
        return None
    return point.owner_object()


def _selector(log: DecisionLog):
    return _inductor_class(log, points.AUTOTUNE_LOOKUP, "max-autotune")


def _scheduling(log: DecisionLog):
    return _inductor_class(log, points.FUSION_BENCHMARK, "fusion benchmark")


def _lookup_args(args: tuple, kwargs: dict):
    """(choices, op, inputs key, benchmark, hint override) of a PersistentCache.lookup call."""
    names = ("choices", "op", "inputs", "benchmark", "hint_override")
    values = dict(zip(names, args))
    values.update({name: kwargs[name] for name in names if name in kwargs})
    return (values.get("choices"), values.get("op"), values.get("inputs"), values.get("benchmark"),
            values.get("hint_override"))


def _precision() -> str:
    import torch

    return torch.get_float32_matmul_precision()


def _autotune_decision(key: str, op: str, inputs: str, ids: list[str], timings: dict[str, float], origin: str,
                       rule: str, detail: dict | None = None) -> Decision:
    winner = fastest(timings) or (ids[0] if ids else "")
    return Decision(kind="autotune", key=key, choice=winner, origin=origin, rule=rule,
                    summary=inductor_keys.autotune_summary(op, inputs), where=inductor_keys.compile_id(),
                    timings=dict(timings), detail={"choices": ids, **(detail or {})})


def _module_source(module) -> str | None:
    path = getattr(module, "__file__", None)
    try:
        return Path(path).read_text(encoding="utf-8") if path else None
    except OSError:
        return None


class _FusionContext:
    """Which nodes the scheduler is deciding to fuse (for the words of a fusion benchmark)."""

    def __init__(self):
        self.pairs: list[str] = []

    def wrap(self, original):
        context = self

        def speedup_by_fusion(scheduler, node1, node2, *args, **kwargs):
            context.pairs.append(f"{_node_name(node1)} with {_node_name(node2)}")
            try:
                return original(scheduler, node1, node2, *args, **kwargs)
            finally:
                context.pairs.pop()

        return speedup_by_fusion

    def summary(self, node_names) -> str:
        names = ", ".join(sorted(str(name) for name in node_names)) if node_names else ""
        kernel = f"kernel of {names}" if names and names != "unknown" else "a fused kernel"
        return f"{kernel}, timed to decide fusing {self.pairs[-1]}" if self.pairs else kernel


def _node_name(node) -> str:
    try:
        return node.get_name()
    except Exception:  # noqa: BLE001 - only words
        return "?"


def _benchmark_args(args: tuple, kwargs: dict):
    """(module, node names) of a benchmark_codegened_module call."""
    module = args[0] if args else kwargs.get("mod")
    node_names = kwargs.get("node_names", args[2] if len(args) > 2 else None)
    return module, node_names


def _fusion_decision(key: str, ms: float, origin: str, rule: str, summary: str, detail: dict | None = None) -> Decision:
    return Decision(kind="fusion_benchmark", key=key, choice=_ms(ms), origin=origin, rule=rule, summary=summary,
                    where=inductor_keys.compile_id(), timings={"ms": ms}, detail=detail or {})


def _ms(ms: float) -> str:
    return "failed (inf)" if not math.isfinite(ms) else f"{ms:.4f} ms"


def _patch_scheduler(patches: Patches, context: _FusionContext) -> None:
    if points.SPEEDUP_BY_FUSION.holds():
        patches.wrap(points.SPEEDUP_BY_FUSION, context.wrap)


# -- --target cuda ---------------------------------------------------------------------------


@contextlib.contextmanager
def recording(log: DecisionLog):
    """Record every choice timing and fusion benchmark the GPU makes while inside."""
    selector, scheduling = _selector(log), _scheduling(log)
    context = _FusionContext()
    with Patches() as patches:
        if selector is not None:
            original_lookup = selector.lookup

            def lookup(cache, *args, **kwargs):
                timings = original_lookup(cache, *args, **kwargs)
                with log.guard("max-autotune"):
                    choices, op, inputs, benchmark, hint = _lookup_args(args, kwargs)
                    if timings and choices:
                        ids = inductor_keys.choice_ids(choices)
                        by_id = {cid: float(timings[choice]) for choice, cid in zip(choices, ids) if choice in timings}
                        log.add(_autotune_decision(inductor_keys.autotune_key(op, inputs, hint, _precision()), op,
                                                   inputs, ids, by_id, "timed", "timed on the GPU: the fastest choice"))
                return timings

            patches.replace(points.AUTOTUNE_LOOKUP, lookup)
        if scheduling is not None:
            original_benchmark = scheduling.benchmark_codegened_module

            def benchmark_codegened_module(backend, *args, **kwargs):
                result = original_benchmark(backend, *args, **kwargs)
                with log.guard("fusion benchmark"):
                    module, node_names = _benchmark_args(args, kwargs)
                    source = _module_source(module)
                    if source is not None and isinstance(result, tuple) and result:
                        log.add(_fusion_decision(module_key(source), float(result[0]), "timed", "timed on the GPU",
                                                 context.summary(node_names)))
                return result

            patches.replace(points.FUSION_BENCHMARK, benchmark_codegened_module)
            _patch_scheduler(patches, context)
        yield


# -- virtual-cuda ----------------------------------------------------------------------------


@contextlib.contextmanager
def replaying(log: DecisionLog):
    """Answer max-autotune's timings from the recording in `log`, else guess (see the rules)."""
    selector, scheduling = _selector(log), _scheduling(log)
    context = _FusionContext()
    with Patches() as patches:
        if selector is not None:
            original_lookup = selector.lookup

            def lookup(cache, *args, **kwargs):
                choices, op, inputs, benchmark, hint = _lookup_args(args, kwargs)
                if benchmark is None or not choices:  # a cache-only probe: nothing is timed, as on the GPU
                    return original_lookup(cache, *args, **kwargs)
                return _replay_lookup(log, list(choices), op, inputs, hint)

            patches.replace(points.AUTOTUNE_LOOKUP, lookup)
            if points.AUTOTUNE_BENCHMARK.holds():  # reached only outside the cache lookup: nothing can be timed
                def benchmark(cache, choices, *args, **kwargs):
                    log.problems.append("max-autotune timed choices outside select_algorithm's cache: "
                                        "every choice taken as equally fast")
                    return {choice: 0.0 for choice in choices}

                patches.replace(points.AUTOTUNE_BENCHMARK, benchmark)
        if scheduling is not None:
            def benchmark_codegened_module(backend, *args, **kwargs):
                module, node_names = _benchmark_args(args, kwargs)
                return _replay_benchmark(log, module, context.summary(node_names))

            patches.replace(points.FUSION_BENCHMARK, benchmark_codegened_module)
            _patch_scheduler(patches, context)
        yield


def _replay_lookup(log: DecisionLog, choices: list, op: str, inputs: str, hint) -> dict:
    key = inductor_keys.autotune_key(op, inputs, hint, _precision())
    ids = inductor_keys.choice_ids(choices)
    recorded = log.find("autotune", key)
    if recorded is not None:
        known = {cid: recorded.timings[cid] for cid in ids if cid in recorded.timings}
        missing = [cid for cid in ids if cid not in recorded.timings]
        winner = fastest(recorded.timings)
        if winner is not None and winner in known:
            rule = f"replayed from {log.replay.source}"
            if missing:
                rule += f" ({len(missing)} of this compile's choices were not timed there: taken as slowest)"
            log.add(_autotune_decision(key, op, inputs, ids, known, "replayed", rule,
                                       {"not_recorded": missing} if missing else None))
            return {choice: known.get(cid, math.inf) for choice, cid in zip(choices, ids)}
        if known:
            rule = (f"the GPU's fastest choice ({winner}) is not among this compile's choices: the fastest of the "
                    f"others as the GPU timed them ({log.replay.source})")
            log.add(_autotune_decision(key, op, inputs, ids, known, "guessed", rule, {"not_recorded": missing}))
            return {choice: known.get(cid, math.inf) for choice, cid in zip(choices, ids)}
    timings = {cid: 0.0 for cid in ids}
    log.add(_autotune_decision(key, op, inputs, ids, {}, "guessed", GUESS_CHOICE_RULE.format(first=ids[0])))
    return {choice: timings[cid] for choice, cid in zip(choices, ids)}


def _replay_benchmark(log: DecisionLog, module, summary: str) -> tuple[float, str]:
    path = str(getattr(module, "__file__", "") or "")
    source = _module_source(module)
    key = module_key(source) if source is not None else ""
    recorded = log.find("fusion_benchmark", key) if key else None
    if recorded is not None:
        ms = recorded.timings.get("ms", math.inf)
        ms = math.inf if ms is None else float(ms)
        log.add(_fusion_decision(key, ms, "replayed", f"replayed from {log.replay.source}",
                                 recorded.summary or summary))
        return ms, path
    log.add(_fusion_decision(key or "module:?", 0.0, "guessed", GUESS_FUSION_RULE, summary))
    return 0.0, path
