"""A recording's timing decisions, start to end (docs/decisions.md).

- `--target cuda`: `recording(log)` records what the GPU decides while the model
  compiles (pad_mm, max-autotune's choices, fusion benchmarks); after the run,
  `launch_decisions` adds each Triton kernel's launch config (asm_launches).
- virtual-cuda: `replaying(log)` answers the same questions from `log.replay` (a
  recording) or, for one it does not hold, by Inductor's own rule, saying which;
  after the run, `replay_launches` gives each kernel the config the GPU launched for
  the same kernel, where recorded.
"""
from __future__ import annotations

import contextlib

from kernelscope.asm.model import LaunchConfig
from kernelscope.decisions.keys import triton_config_key
from kernelscope.engine.decision_hooks import autotune_hooks, pad_mm_hooks
from kernelscope.engine.decision_hooks.log import DecisionLog
from kernelscope.run_record import Decision, GraphRecord

LAUNCH_FIELDS = ("config", "candidates", "registers", "spills", "shared_bytes")


@contextlib.contextmanager
def recording(log: DecisionLog):
    with pad_mm_hooks.recording(log), autotune_hooks.recording(log):
        yield log


@contextlib.contextmanager
def replaying(log: DecisionLog):
    with pad_mm_hooks.replaying(log), autotune_hooks.replaying(log):
        yield log


def gpu_of(device: str) -> dict | None:
    """{name, capability, sm_count} of the GPU `device` generates code for (virtual-cuda:
    the one it emulates); None for cpu-triton."""
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return {"name": props.name, "capability": [props.major, props.minor],
                "sm_count": getattr(props, "multi_processor_count", None)}
    if device == "virtual-cuda":
        from kernelscope.engine.devices import virtual_cuda

        props = virtual_cuda._device_properties()
        return {"name": props.name, "capability": [props.major, props.minor], "sm_count": props.multi_processor_count}
    return None


def replay_warnings(log: DecisionLog, gpu: dict | None, torch_version: str, triton_version: str) -> list[str]:
    """What a run replaying `log.replay` must say about where it came from."""
    replay = log.replay
    if replay is None:
        return []
    found = []
    recorded_gpu = replay.gpu
    if gpu and recorded_gpu and list(recorded_gpu.get("capability") or []) != list(gpu.get("capability") or []):
        found.append(f"decisions from {replay.source} were recorded on {recorded_gpu.get('name')} "
                     f"(sm_{''.join(map(str, recorded_gpu.get('capability') or []))}), not an "
                     f"sm_{''.join(map(str, gpu['capability']))} GPU: none can be replayed")
    elif gpu and recorded_gpu and recorded_gpu.get("sm_count") not in (None, gpu.get("sm_count")):
        found.append(f"decisions from {replay.source} were recorded on {recorded_gpu.get('name')} with "
                     f"{recorded_gpu.get('sm_count')} SMs; virtual-cuda emulates {gpu.get('sm_count')}: "
                     "choices Inductor makes from the SM count may differ")
    for name, mine in (("torch", torch_version), ("triton", triton_version)):
        theirs = replay.recorded_on.get(name)
        if theirs and theirs != mine:
            found.append(f"decisions from {replay.source} were recorded with {name} {theirs}, this run has {mine}: "
                         "those Inductor asks differently are guessed (listed in the run's decisions)")
    return found


def check_gpu(log: DecisionLog, gpu: dict | None) -> None:
    """A recording made on a GPU of another architecture is not replayed: its decisions are
    not this GPU's (each is then guessed, and listed as unused)."""
    replay = log.replay
    if replay is None or not gpu or not replay.gpu:
        return
    if list(replay.gpu.get("capability") or []) != list(gpu.get("capability") or []):
        log.blocked = f"recorded on {replay.gpu.get('name')}, another architecture"


# -- Triton launch configs (decided at the first launch, after the compile) -------------------


def launch_decisions(graphs: list[GraphRecord], times: dict[int, dict[str, float]], log: DecisionLog) -> None:
    """--target cuda: each launched Triton kernel's config as a `triton_config` decision."""
    for graph in graphs:
        for kernel in graph.kernels:
            if kernel.launch is None or not kernel.source:
                continue
            key = triton_config_key(kernel.name, kernel.source)
            if key is None:
                continue
            launch = kernel.launch
            config = LaunchConfig.from_dict(launch["config"])
            candidates = [LaunchConfig.from_dict(c) for c in launch.get("candidates") or []]
            timings = times.get(id(kernel), {})
            if config not in candidates and candidates:
                origin, rule = "timed", (f"timed on the GPU: coordinate descent from the fastest of {len(candidates)} "
                                         "configs found this one")
            elif len(candidates) > 1:
                origin, rule = "timed", f"timed on the GPU: the fastest of {len(candidates)} configs"
            else:
                origin, rule = "heuristic", "the kernel's only config: nothing to time"
            log.add(Decision(kind="triton_config", key=key, choice=config.label, origin=origin, rule=rule,
                             summary=f"launch config of {kernel.name}", where=graph.key, kernel=kernel.name,
                             timings=timings, detail={field: launch.get(field) for field in LAUNCH_FIELDS}))


def replay_launches(graphs: list[GraphRecord], log: DecisionLog) -> None:
    """virtual-cuda: give each Triton kernel the config the GPU launched for the same kernel
    (name and code), where the recording holds one. The others are chosen when built below
    the kernel (asm_build: Inductor's own untimed choice)."""
    if log.replay is None:
        return
    for graph in graphs:
        for kernel in graph.kernels:
            if kernel.kind == "extern" or not kernel.source:
                continue
            key = triton_config_key(kernel.name, kernel.source)
            recorded = log.find("triton_config", key) if key else None
            if recorded is None or not isinstance(recorded.detail.get("config"), dict):
                continue
            source = log.replay.source
            kernel.launch = {**{field: recorded.detail.get(field) for field in LAUNCH_FIELDS}, "replayed_from": source}
            kernel.launch["candidates"] = kernel.launch["candidates"] or []
            log.add(Decision(kind="triton_config", key=key, choice=recorded.choice, origin="replayed",
                             rule=f"replayed from {source} ({recorded.rule})", summary=recorded.summary,
                             where=graph.key, kernel=kernel.name, timings=dict(recorded.timings),
                             detail={**recorded.detail, "replayed_from": source}))
