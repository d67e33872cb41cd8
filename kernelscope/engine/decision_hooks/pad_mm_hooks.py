"""pad_mm's decisions: whether a matmul is compute bound (from the GPU's clocks and
bandwidth), and, when it is, whether padding its sizes to an aligned multiple is
faster, which pad_mm answers by timing both on the GPU (or by a learned heuristic).

On `--target cuda` the answers are recorded; under virtual-cuda they are replayed from
a recording, or guessed by Inductor's own rules when there is none (see `replaying`).
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.engine import patching
from kernelscope.engine.decision_hooks import inductor_keys
from kernelscope.engine.decision_hooks.log import DecisionLog
from kernelscope.run_record import Decision

RECORD_NEEDS = (points.PAD_MM_GET_CACHED, points.PAD_MM_SET_CACHED, points.PAD_MM_BENCH_KEY,
                points.PAD_MM_COMPUTE_BOUND)
REPLAY_NEEDS = (points.PAD_MM_GET_CACHED, points.PAD_MM_BENCH_KEY)


def _module(log: DecisionLog, needs: tuple):
    """torch's pad_mm module where every patch point of `needs` holds; else None, and the log
    says that pad_mm's decisions are off and why."""
    import torch

    problems = [problem for point in needs if (problem := point.check())]
    if problems:
        log.problems.append(f"pad_mm decisions off on torch {torch.__version__}: {'; '.join(problems)}")
        return None
    return needs[0].owner_object()


class _Keys:
    """What each pad_mm benchmark key was made from (its summary, and the tensors a learned
    heuristic reads), remembered as pad_mm makes the key."""

    def __init__(self, module):
        self.original = module.should_pad_bench_key
        self.made: dict[str, tuple] = {}

    def __call__(self, match, mat1, mat2, op, input=None, is_base_time_key=False, *args, **kwargs):
        key = self.original(match, mat1, mat2, op, input, is_base_time_key, *args, **kwargs)
        if not is_base_time_key and isinstance(key, str):
            self.made.setdefault(key, (match, mat1, mat2, op, input))
        return key

    def summary(self, key: str) -> str:
        made = self.made.get(key)
        if made is None:
            return ""
        try:
            return inductor_keys.pad_mm_summary(made[1], made[2], made[3], made[4])
        except Exception:  # noqa: BLE001 - only words
            return ""


def _pad_decision(key: str, padded: bool, origin: str, rule: str, summary: str, timings: dict | None = None,
                  detail: dict | None = None) -> Decision:
    return Decision(kind="pad_mm", key=key, choice="pad" if padded else "no pad", origin=origin, rule=rule,
                    summary=summary, where=inductor_keys.compile_id(), timings=timings or {}, detail=detail or {})


def _bound_decision(key: str, bound: bool, origin: str, rule: str) -> Decision:
    return Decision(kind="mm_compute_bound", key=key, choice="compute bound" if bound else "not compute bound",
                    origin=origin, rule=rule, summary=key,
                    where=inductor_keys.compile_id())


# -- --target cuda ---------------------------------------------------------------------------


@contextlib.contextmanager
def recording(log: DecisionLog):
    """Record every pad_mm answer the GPU gives while inside."""
    module = _module(log, RECORD_NEEDS)
    if module is None:
        yield
        return
    keys = _Keys(module)
    timed: dict[str, dict] = {}  # key -> the benchmark times is_padded_faster compared
    by_heuristic: list[bool] = []
    original_get, original_set = module.get_cached_should_pad, module.set_cached_should_pad
    original_bound = module.is_mm_compute_bound

    def get_cached_should_pad(key):
        value = original_get(key)
        if value is not None:
            with log.guard("pad_mm"):
                log.add(_pad_decision(key, bool(value), "timed", "timed on this GPU before (pad_mm's cache)",
                                      keys.summary(key)))
        return value

    def set_cached_should_pad(key, value):
        with log.guard("pad_mm"):
            _log_set(key, value)
        return original_set(key, value)

    def _log_set(key, value):
        if key in timed:
            times = timed.pop(key)
            log.add(_pad_decision(key, bool(value), "timed",
                                  f"timed on the GPU: padded {_ms(times.get('padded'))} x {times['multiplier']} vs "
                                  f"unpadded {_ms(times.get('unpadded'))}",
                                  keys.summary(key), {k: times[k] for k in ("padded", "unpadded") if k in times},
                                  {"multiplier": times["multiplier"]}))
        elif by_heuristic:
            log.add(_pad_decision(key, bool(value), "heuristic", "Inductor's learned pad_mm heuristic (AutoHeuristic)",
                                  keys.summary(key)))
        else:
            log.add(_pad_decision(key, bool(value), "timed", "timed on the GPU", keys.summary(key)))

    def is_mm_compute_bound(M, K, N, dtype, *args, **kwargs):
        bound = original_bound(M, K, N, dtype, *args, **kwargs)
        with log.guard("pad_mm"):
            log.add(_bound_decision(inductor_keys.compute_bound_key(M, K, N, dtype), bool(bound), "heuristic",
                                    "Inductor's estimate from this GPU's clocks and memory bandwidth"))
        return bound

    with patching.Patches() as patches:
        patches.replace(points.PAD_MM_BENCH_KEY, keys)
        patches.replace(points.PAD_MM_GET_CACHED, get_cached_should_pad)
        patches.replace(points.PAD_MM_SET_CACHED, set_cached_should_pad)
        patches.replace(points.PAD_MM_COMPUTE_BOUND, is_mm_compute_bound)
        if points.PAD_MM_PADDED_FASTER.holds():
            original_faster = module.is_padded_faster

            def is_padded_faster(key, ori_time, pad_time, *args, **kwargs):
                with log.guard("pad_mm"):
                    timed[key] = {"unpadded": float(ori_time), "padded": float(pad_time),
                                  "multiplier": _multiplier()}
                return original_faster(key, ori_time, pad_time, *args, **kwargs)

            patches.replace(points.PAD_MM_PADDED_FASTER, is_padded_faster)
        if points.PAD_MM_AUTOHEURISTIC.holds():
            original_ah = module.run_autoheuristic

            def run_autoheuristic(*args, **kwargs):
                by_heuristic.append(True)
                try:
                    return original_ah(*args, **kwargs)
                finally:
                    by_heuristic.pop()

            patches.replace(points.PAD_MM_AUTOHEURISTIC, run_autoheuristic)
        yield


def _multiplier() -> float:
    """How much faster the padded matmul must be (pad_mm's `shape_padding_multiplier`)."""
    import torch

    options = getattr(torch._inductor.config, "post_grad_fusion_options", {}) or {}
    return float((options.get("shape_padding_multiplier") or {}).get("value", 1.1))


def _ms(value) -> str:
    return "?" if value is None else f"{value:.4f} ms"


# -- virtual-cuda ----------------------------------------------------------------------------


@contextlib.contextmanager
def replaying(log: DecisionLog):
    """Answer pad_mm's GPU questions from the recording in `log`, else by Inductor's own rules."""
    module = _module(log, REPLAY_NEEDS)
    if module is None:
        yield
        return
    keys = _Keys(module)
    original_bound = module.is_mm_compute_bound if points.PAD_MM_COMPUTE_BOUND.check() is None else None

    def get_cached_should_pad(key):
        recorded = log.find("pad_mm", key)
        if recorded is not None:
            log.add(_pad_decision(key, recorded.choice == "pad", "replayed", f"replayed from {log.replay.source}",
                                  recorded.summary or keys.summary(key), dict(recorded.timings), dict(recorded.detail)))
            return recorded.choice == "pad"
        padded, rule = _guess(module, keys, key)
        log.add(_pad_decision(key, padded, "guessed", rule, keys.summary(key)))
        return padded

    def is_mm_compute_bound(M, K, N, dtype, *args, **kwargs):
        key = inductor_keys.compute_bound_key(M, K, N, dtype)
        recorded = log.find("mm_compute_bound", key)
        if recorded is not None:
            bound = recorded.choice == "compute bound"
            log.add(_bound_decision(key, bound, "replayed", f"replayed from {log.replay.source}"))
            return bound
        bound = original_bound(M, K, N, dtype, *args, **kwargs)
        log.add(_bound_decision(key, bool(bound), "guessed",
                                "Inductor's estimate from the emulated GPU (without nvidia-smi to read the clocks, "
                                "Inductor takes a matmul as compute bound)"))
        return bound

    with patching.Patches() as patches:
        patches.replace(points.PAD_MM_BENCH_KEY, keys)
        patches.replace(points.PAD_MM_GET_CACHED, get_cached_should_pad)
        if original_bound is not None:
            patches.replace(points.PAD_MM_COMPUTE_BOUND, is_mm_compute_bound)
        yield


def _guess(module, keys: _Keys, key: str) -> tuple[bool, str]:
    """(pad?, the rule) with nothing recorded: Inductor's learned pad_mm heuristic when torch
    has one for this GPU and it is sure, else no padding (what pad_mm answers when it must
    not time: `config.deterministic`)."""
    choice, heuristic = _learned_heuristic(module, keys.made.get(key))
    if choice is not None:
        return choice == "pad", f"Inductor's learned pad_mm heuristic ({heuristic})"
    why = heuristic or "no learned pad_mm heuristic was asked"
    return False, f"no pad, as pad_mm answers when it must not time (config.deterministic): {why}"


def _learned_heuristic(module, made: tuple | None) -> tuple[str | None, str]:
    """("orig"/"pad" or None, the heuristic or why none): Inductor's learned pad_mm
    heuristics (AutoHeuristic), asked with the context pad_mm gives them (only aten.mm has
    them), on the emulated GPU's shared memory and capability."""
    if made is None:
        return None, ""
    match, mat1, mat2, op, input = made
    try:
        import torch
        from torch._inductor.autoheuristic.autoheuristic_utils import AHMetadata
        from torch._inductor.autoheuristic.learned_heuristic_controller import LearnedHeuristicController
        from torch._inductor.utils import get_gpu_shared_memory

        if op is not torch.ops.aten.mm:
            return None, f"Inductor's learned pad_mm heuristics cover aten.mm only, not {op}"
        m, k, n = (_hint(size) for size in (mat1.shape[0], mat1.shape[1], mat2.shape[1]))
        plain1, plain2 = _plain(mat1), _plain(mat2)
        context = module.get_context(
            plain1, plain2, module.should_exclude_padding_time(match, "mat1"),
            module.should_exclude_padding_time(match, "mat2"),
            module.get_padded_length(m, module.get_alignment_size(plain1)),
            module.get_padded_length(k, module.get_alignment_size(plain1)),
            module.get_padded_length(n, module.get_alignment_size(plain2)))
        operations = getattr(module, "pad_mm_operations", None)
        if operations is not None:
            context.apply_operations(operations())
        metadata = AHMetadata(get_gpu_shared_memory(), torch.cuda.get_device_capability(), ["orig", "pad"], "pad_mm")
        precondition = getattr(module, "pad_mm_precondition", None)
        if precondition is not None and not precondition(metadata, context):
            return None, "the matmul is below the size Inductor's learned pad_mm heuristic covers"
        for heuristic in LearnedHeuristicController(metadata, context).get_heuristics("pad_mm"):
            if heuristic.check_precondition(metadata, context):
                choice = heuristic.get_decision(context, metadata.choices)
                name = type(heuristic).__name__
                if choice in ("orig", "pad"):
                    return choice, name
                return None, f"Inductor's learned pad_mm heuristic {name} is unsure"
    except Exception as error:  # noqa: BLE001 - a guess: said in its rule
        return None, f"Inductor's learned pad_mm heuristic could not be asked: {type(error).__name__}"
    return None, "Inductor has no learned pad_mm heuristic for this GPU"


def _hint(size):
    """An int for a size: its hint when symbolic (as pad_mm's own heuristics read it)."""
    if isinstance(size, int):
        return size
    try:
        from torch.fx.experimental import symbolic_shapes

        for name in ("optimization_hint", "hint_int"):  # torch 2.13; older
            read = getattr(symbolic_shapes, name, None)
            if read is not None:
                return int(read(size))
    except Exception:  # noqa: BLE001
        return None
    return None


def _plain(tensor):
    """A meta tensor of `tensor`'s hinted sizes and strides: what a heuristic may read
    without adding guards on symbolic sizes."""
    import torch

    sizes = [_hint(size) for size in tensor.shape]
    strides = [_hint(stride) for stride in tensor.stride()]
    if None in sizes or None in strides:
        raise ValueError("sizes without a hint")
    return torch.empty_strided(sizes, strides, dtype=tensor.dtype, device="meta")

