"""--target cuda: the config each Triton kernel's autotuner launched on the GPU (and the
times of the configs it compared: the kernel's `triton_config` decision, docs/decisions.md).

Inductor makes one CachingAutotuner per kernel. At the first launch it times its
configs (when it has several) and keeps one launcher: that launcher's config is the
kernel the GPU runs, with the registers, spills and shared memory the driver reported
for it. A recording on a GPU keeps these (cheap: read after the run), so the build
below the kernel (asm_build.py) compiles that config, on first ask or with --asm.
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import Patches


@contextlib.contextmanager
def autotuners_seen(problems: list[str]):
    """While inside, every CachingAutotuner Inductor makes is kept, with the times of its
    configs when it times them (`benchmark_all_configs`); yields the list of
    (autotuner, candidate configs, {config label: ms}). Where this torch's autotuner is not
    as expected (patch_points, "launch configs") nothing is kept and `problems` says why."""
    seen: list = []
    timed: dict[int, dict[str, float]] = {}
    problem = points.AUTOTUNER_INIT.check()
    if problem:
        problems.append(f"launch configs not recorded: {problem}")
        yield seen
        return
    original = points.AUTOTUNER_INIT.current()

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append((self, [_config_dict(config) for config in self.configs or []], timed.setdefault(id(self), {})))

    with Patches() as patches:
        patches.replace(points.AUTOTUNER_INIT, init)
        if points.AUTOTUNER_BENCHMARK_ALL.holds():
            original_benchmark = points.AUTOTUNER_BENCHMARK_ALL.current()

            def benchmark_all_configs(self, *args, **kwargs):
                timings = original_benchmark(self, *args, **kwargs)
                times = timed.setdefault(id(self), {})
                for launcher, ms in (timings or {}).items():
                    config = getattr(launcher, "config", None)
                    if config is not None:
                        times[_label(config)] = float(ms)
                return timings

            patches.replace(points.AUTOTUNER_BENCHMARK_ALL, benchmark_all_configs)
        yield seen


def launch_record(autotuner, candidates: list[dict]) -> dict | None:
    """{"config", "candidates", "registers", "spills", "shared_bytes"} of a launched kernel;
    None when it was never launched (or kept several launchers)."""
    launchers = getattr(autotuner, "launchers", None) or []
    if len(launchers) != 1 or getattr(launchers[0], "config", None) is None:
        return None
    launcher = launchers[0]
    return {"config": _config_dict(launcher.config), "candidates": candidates,
            "registers": getattr(launcher, "n_regs", None), "spills": getattr(launcher, "n_spills", None),
            "shared_bytes": getattr(launcher, "shared", None), "replayed_from": None}


def attach(graphs, seen: list) -> dict[int, dict[str, float]]:
    """Give each recorded Triton kernel the launch of its autotuner: the one with the
    kernel's name whose function source is in the kernel's file (identical kernels of
    two graphs share one autotuner, as Inductor shares them). Returns id(kernel) -> the
    times of its configs, for the kernels whose autotuner timed them."""
    by_name: dict[str, list] = {}
    for autotuner, candidates, timings in seen:
        fn = getattr(autotuner, "fn", None)
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None)
        if name:
            by_name.setdefault(name, []).append((autotuner, candidates, timings))
    times: dict[int, dict[str, float]] = {}
    for graph in graphs:
        for kernel in graph.kernels:
            if kernel.kind == "extern" or not kernel.source:
                continue
            for autotuner, candidates, timings in by_name.get(kernel.name, []):
                source = getattr(autotuner.fn, "src", "") or ""
                if source and source.strip() in kernel.source:
                    record = launch_record(autotuner, candidates)
                    if record is not None:
                        kernel.launch = record
                        times[id(kernel)] = dict(timings)
                        break
    return times


def _config_dict(config) -> dict:
    from kernelscope.asm.model import LaunchConfig

    return LaunchConfig.of(config.kwargs, config.num_warps, config.num_stages).to_dict()


def _label(config) -> str:
    from kernelscope.asm.model import LaunchConfig

    return LaunchConfig.of(config.kwargs, config.num_warps, config.num_stages).label
