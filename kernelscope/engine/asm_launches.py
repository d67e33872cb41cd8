"""--target cuda: the config each Triton kernel's autotuner launched on the GPU.

Inductor makes one CachingAutotuner per kernel. At the first launch it times its
configs (when it has several) and keeps one launcher: that launcher's config is the
kernel the GPU runs, with the registers, spills and shared memory the driver reported
for it. A recording on a GPU keeps these (cheap: read after the run), so the build
below the kernel (asm_build.py) compiles that config, on first ask or with --asm.
"""
from __future__ import annotations

import contextlib
from unittest import mock


@contextlib.contextmanager
def autotuners_seen():
    """While inside, every CachingAutotuner Inductor makes is kept; yields the list."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    seen: list = []
    original = CachingAutotuner.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append((self, [_config_dict(config) for config in self.configs or []]))

    with mock.patch.object(CachingAutotuner, "__init__", init):
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
            "shared_bytes": getattr(launcher, "shared", None)}


def attach(graphs, seen: list) -> None:
    """Give each recorded Triton kernel the launch of its autotuner: the one with the
    kernel's name whose function source is in the kernel's file (identical kernels of
    two graphs share one autotuner, as Inductor shares them)."""
    by_name: dict[str, list] = {}
    for autotuner, candidates in seen:
        fn = getattr(autotuner, "fn", None)
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None)
        if name:
            by_name.setdefault(name, []).append((autotuner, candidates))
    for graph in graphs:
        for kernel in graph.kernels:
            if kernel.kind == "extern" or not kernel.source:
                continue
            for autotuner, candidates in by_name.get(kernel.name, []):
                source = getattr(autotuner.fn, "src", "") or ""
                if source and source.strip() in kernel.source:
                    record = launch_record(autotuner, candidates)
                    if record is not None:
                        kernel.launch = record
                        break


def _config_dict(config) -> dict:
    from kernelscope.asm.model import LaunchConfig

    return LaunchConfig.of(config.kwargs, config.num_warps, config.num_stages).to_dict()
