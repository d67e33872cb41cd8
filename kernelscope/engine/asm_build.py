"""Compile a stored Triton kernel the way Inductor compiles it for the GPU — TTIR, TTGIR,
PTX, cubin — with no GPU, then read its SASS, line maps and facts (kernelscope.asm).

The kernel file Inductor wrote is executed as Inductor executes it: its
`@triton_heuristics.*` decorator makes Inductor's own CachingAutotuner from the
file's `triton_meta` (signature, constants, device) and autotune configs, and the
autotuner's `_precompile_config` runs `triton.compile` with the options Inductor
passes (num_warps, num_stages, the config's constants, enable_fp_fusion, debug, ...)
for the GPU the file names (`cc=90`: sm_90). virtual-cuda's driver stands in for
the GPU (devices/virtual_cuda.py). ptxas makes the cubin: the one Inductor points Triton at
when it compiles for a GPU (`ptxas_as_inductor_uses`): torch's own `torch/bin/ptxas` in a
CUDA build of torch, else the Triton wheel's. (They differ: a cu130 torch ships CUDA 13's
ptxas, PTX ISA 9.0, where Triton 3.6 ships CUDA 12.8's, PTX 8.7, and register allocation
differs for some kernels; on the H100 the first gave the GPU's SASS, the second did not.)

What is compiled is the string Inductor compiles, which has one line before the stored
kernel file's first (`INDUCTOR_LINE_OFFSET`): the line numbers a kernel embeds in its
code (a device-side assert's) are the GPU's, and the stage texts count lines as Inductor's
file does; the line maps are moved to the stored file's lines.

Which config is built:
- a run on a GPU (`--target cuda`) recorded the config the kernel's autotuner
  launched (asm_launches.py): that one; a virtual-cuda run that replayed a GPU's
  decisions (docs/decisions.md) holds the config the GPU launched for the same kernel:
  that one;
- a kernel with one config: the GPU runs it without timing anything;
- several: the GPU times them at the first launch and keeps the fastest, which
  cannot be known without a GPU. Shown is the config Inductor itself runs when it
  must not time (`autotune_pointwise=False`, `force_filter_reduction_configs`), and
  the facts say so.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import linecache
import os
import re
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelscope.asm.assemble import CompiledStages, assemble
from kernelscope.asm.model import KernelAsm, LaunchConfig
from kernelscope.engine import patch_points as points
from kernelscope.engine import patching
from kernelscope.engine.cpu_asm_build import build_cpp_kernel
from kernelscope.errors import UserError
from kernelscope.store.parts.asm_builds import is_cpp_kernel

# What Inductor reads to keep one config without timing (torch/_inductor/runtime/triton_heuristics.py).
NO_TIMING_META = {"autotune_pointwise": False, "force_filter_reduction_configs": True}
_HEURISTICS = ("pointwise", "reduction", "persistent_reduction")


class KernelBuildError(UserError):
    """A kernel that cannot be compiled below Triton (not an Inductor Triton kernel, ...)."""


@dataclass
class KernelToBuild:
    name: str  # the kernel function
    path: str  # the stored kernel file (absolute): the file its locations name
    source: str
    launch: dict | None = None  # what the autotuner launched on a GPU (asm_launches.launch_record), or replayed


def build_kernel(kernel: KernelToBuild) -> KernelAsm:
    """One kernel through Inductor's compile path, for the GPU its file names."""
    import torch._inductor.config as inductor_config

    from kernelscope.engine.devices import virtual_cuda

    started = time.perf_counter()
    patching.checked(points.STATIC_LAUNCHER_CONFIG)
    ptxas_as_inductor_uses()
    as_compiled = KernelToBuild(kernel.name, kernel.path, "\n" * INDUCTOR_LINE_OFFSET + kernel.source, kernel.launch)
    with virtual_cuda.pretend_cuda_present(), \
            inductor_config.patch(use_static_triton_launcher=False), \
            _fresh_triton_cache(), \
            _source_read_as(as_compiled.path, as_compiled.source), \
            heuristics_observed() as picks:
        autotuner = _load_autotuner(as_compiled)
        config, candidates, chosen_by = choose_config(autotuner, picks.get(id(autotuner.fn)), kernel.launch)
        with _ptxas_log() as log:
            result = autotuner._precompile_config(config)
        binary = result.kernel
        compiled = CompiledStages(
            name=binary.metadata.name, arch=int(binary.metadata.target.arch),
            ttir=binary.asm["ttir"], ttgir=binary.asm["ttgir"], ptx=binary.asm["ptx"], cubin=binary.asm["cubin"],
            num_warps=binary.metadata.num_warps, num_stages=binary.metadata.num_stages,
            shared_bytes=binary.metadata.shared, ptxas_log=log.getvalue(),
        )
        gpu = None if kernel.launch is None else {
            key: kernel.launch.get(key) for key in ("registers", "spills", "shared_bytes")}
        built = assemble(compiled, kernel.path, _launch_config(config), [_launch_config(c) for c in candidates],
                         chosen_by, gpu)
        built.lines = _lines_of_the_stored_file(built.lines)
        if kernel.launch is None:
            extra = _rblock_scaling(autotuner, result, built)
            if extra:
                built.facts.chosen_by = (
                    f"{built.facts.chosen_by.split(':', 1)[0]}; but with {built.facts.registers} registers per "
                    f"thread Inductor also compiles {', '.join(extra)} (a halved R0_BLOCK, for occupancy) and the "
                    "GPU times them at the first launch: shown is the kernel's own")
    import triton

    from kernelscope.asm import tools

    built.tools["triton"] = getattr(triton, "__version__", "unknown")
    built.tools["ptxas"] = f"{tools.version('ptxas')} ({tools.tool_path('ptxas')})"
    built.build_seconds = time.perf_counter() - started
    return built


# Inductor compiles a kernel from the string its wrapper holds, `'''\n<kernel>'''`: one line
# before the kernel's first, which the stored kernel file (the lines inside the quotes) leaves
# out. The build compiles that string, so the locations a kernel embeds in its code (a
# device-side assert's line) are the GPU's; the line maps are then moved to the stored file.
INDUCTOR_LINE_OFFSET = 1
_CALLED_FROM = re.compile(r"\(called from lines ([\d, ]+);")


@contextlib.contextmanager
def _source_read_as(path: str, source: str):
    """While inside, Python's source lookups (inspect, which Triton's JIT reads its kernel's
    lines and first line number with) see `source` for `path`, not the file on disk."""
    previous = linecache.cache.get(path)
    linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
    try:
        yield
    finally:
        if previous is None:
            linecache.cache.pop(path, None)
        else:
            linecache.cache[path] = previous


def _lines_of_the_stored_file(lines: list) -> list:
    """Line maps of a build from Inductor's string, as lines of the stored kernel file."""
    def moved(line: int) -> int:
        return line - INDUCTOR_LINE_OFFSET

    def via(text: str) -> str:
        return _CALLED_FROM.sub(lambda m: "(called from lines " + ", ".join(
            str(moved(int(n))) for n in m.group(1).split(", ")) + ";", text)

    return [dataclasses.replace(line, kernel_line=moved(line.kernel_line), via=via(line.via))
            for line in lines if moved(line.kernel_line) >= 1]


def ptxas_as_inductor_uses() -> None:
    """Before Inductor compiles a Triton kernel for a GPU it sets TRITON_PTXAS_PATH to torch's
    own ptxas where torch ships one (torch/_inductor/runtime/compile_tasks.py,
    `_set_triton_ptxas_path`, called by async_compile): the same here, so the cubin is the one
    this torch makes on a GPU. A TRITON_PTXAS_PATH the user set is kept, as Inductor keeps it."""
    try:
        from torch._inductor.runtime.compile_tasks import _set_triton_ptxas_path
    except ImportError:  # a torch without it: Triton's own ptxas, as Inductor would use
        return
    _set_triton_ptxas_path()


def _load_autotuner(kernel: KernelToBuild):
    """Execute the kernel file as Inductor loads it (PyCodeCache) and return its autotuner."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    module = types.ModuleType(f"kernelscope_asm_{kernel.name}")
    module.__file__ = kernel.path
    try:
        exec(compile(kernel.source, kernel.path, "exec"), module.__dict__)  # noqa: S102 - Inductor's own code
    except Exception as error:  # noqa: BLE001 - reported per kernel
        raise KernelBuildError(
            f"{kernel.path}: loading the kernel file failed: {type(error).__name__}: {error}") from error
    autotuner = getattr(module, kernel.name, None)
    if not isinstance(autotuner, CachingAutotuner):
        raise KernelBuildError(f"{kernel.path}: {kernel.name} is not an Inductor Triton kernel "
                               "(no @triton_heuristics autotuner): nothing to compile below it")
    device = getattr(autotuner.device_props, "type", "cuda")
    if device != "cuda":
        raise KernelBuildError(f"{kernel.path}: {kernel.name} was generated for a {device} device, not an NVIDIA "
                               "GPU: no PTX or SASS (record with --target virtual-cuda or cuda)")
    return autotuner


@contextlib.contextmanager
def heuristics_observed():
    """While inside, each `@triton_heuristics.pointwise/reduction/persistent_reduction`
    decorator also asks Inductor for its configs without timing (NO_TIMING_META); yields
    {id(kernel function): those configs}."""
    picks: dict[int, list] = {}

    def observed(original: Callable) -> Callable:
        def heuristic(*args, **kwargs):
            decorate = original(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            untimed = dict(copy.deepcopy(kwargs))
            untimed["inductor_meta"] = {**(untimed.get("inductor_meta") or {}), **NO_TIMING_META}
            decorate_untimed = original(*copy.deepcopy(args), **untimed)

            def decorator(fn):
                picks[id(fn)] = list(decorate_untimed(fn).configs)
                return decorate(fn)

            return decorator

        return heuristic

    with patching.Patches() as patches:
        for name in _HEURISTICS:
            if points.HEURISTICS[name].holds():
                patches.wrap(points.HEURISTICS[name], observed)
        yield picks


def choose_config(autotuner, untimed: list | None, launch: dict | None):
    """(config to build, every candidate, why this one)."""
    candidates = list(autotuner.configs)
    count = len(candidates)
    if launch is not None:
        wanted = LaunchConfig.from_dict(launch["config"])
        config = next((c for c in candidates if _launch_config(c) == wanted), None)
        if config is None:  # e.g. a config Inductor added on the GPU (halved R0_BLOCK)
            import triton

            config = triton.Config(dict(wanted.kwargs), num_warps=wanted.num_warps, num_stages=wanted.num_stages)
        tried = len(launch.get("candidates") or []) or count
        how = "the only config" if tried == 1 else f"the fastest of {tried} configs the GPU timed"
        if launch.get("replayed_from"):
            return config, candidates, (f"replayed from {launch['replayed_from']}: the config the GPU launched for "
                                        f"this kernel ({how})")
        return config, candidates, f"launched on the GPU: {how}"
    if count == 1:
        return candidates[0], candidates, "the kernel's only config: the GPU runs it without timing"
    if untimed and len(untimed) == 1:
        return untimed[0], candidates, (
            f"the GPU times {count} configs at the first launch and keeps the fastest, which only a GPU "
            "can tell; shown: the config Inductor runs when it must not time "
            "(autotune_pointwise=False, force_filter_reduction_configs)")
    return candidates[0], candidates, (
        f"the GPU times {count} configs at the first launch and keeps the fastest, which only a GPU can "
        "tell; shown: the first")


def _rblock_scaling(autotuner, result, built: KernelAsm) -> list[str]:
    """Inductor's dynamic R0_BLOCK scaling on a GPU: a reduction using many registers is also
    compiled with a halved R0_BLOCK and the versions are timed. Asked of Inductor itself with
    the registers the cubin uses; the labels of the configs it would add."""
    try:
        if not autotuner._could_rblock_scale:
            return []
        result.kernel.n_regs = built.facts.registers
        result.kernel.n_spills = built.facts.triton_spills
        autotuner.compile_results = [result]
        return [_launch_config(config).label for config in autotuner._iter_rblock_scale_candidates()]
    except (AttributeError, AssertionError, TypeError):  # another torch: the check is skipped
        return []


def _launch_config(config) -> LaunchConfig:
    return LaunchConfig.of(config.kwargs, config.num_warps, config.num_stages)


@contextlib.contextmanager
def _ptxas_log():
    """Triton prints `ptxas -v` (registers, stack frame, spill stores and loads) when asked
    (TRITON_DUMP_PTXAS_LOG); yields the text it printed."""
    captured = io.StringIO()
    if not points.PTXAS_LOG_KNOB.holds():  # an older Triton: the local memory size stands for spills
        yield captured
        return
    with patching.Patches() as patches, contextlib.redirect_stdout(captured):
        patches.assign(points.PTXAS_LOG_KNOB, True)
        yield captured


@contextlib.contextmanager
def _fresh_triton_cache():
    """Triton's cache keys a kernel by its code, not its file: a hit would hand back stages
    whose locations name another run's file. Each build compiles afresh."""
    previous = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="kernelscope-triton-") as directory:
        os.environ["TRITON_CACHE_DIR"] = directory
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = previous


# -- a stored run ----------------------------------------------------------------------------


@dataclass
class BuildSummary:
    built: int
    failed: list[str]  # "kernel: error"
    seconds: float
    kernel_seconds: list[float]

    def to_dict(self) -> dict:
        return {"built": self.built, "failed": self.failed, "seconds": round(self.seconds, 4),
                "kernel_seconds": [round(s, 4) for s in self.kernel_seconds]}


def build_run_asm(store, run_id: int, kernel_ids: list[int] | None = None,
                  on_kernel: Callable[[int, int, str], None] = lambda done, total, name: None) -> BuildSummary:
    """Build every kernel of run `run_id` (or those of `kernel_ids`) the store has no build of,
    storing each as soon as it is built; a kernel that fails is stored with its error. A
    C++ kernel (a stored `.cpp` file) is built for the CPU (cpu_asm_build.build_cpp_kernel),
    a Triton kernel below Triton for the GPU."""
    started = time.perf_counter()
    pending = store.asm.pending(run_id, kernel_ids)
    summary = BuildSummary(0, [], 0.0, [])
    for index, kernel in enumerate(pending):
        on_kernel(index, len(pending), kernel.name)
        path = store.absolute_path(kernel.file)
        kernel_started = time.perf_counter()
        try:
            source = Path(path).read_text(encoding="utf-8")
            if is_cpp_kernel(kernel.file):  # Inductor's cpp backend: built for this machine's CPU
                built = build_cpp_kernel(kernel.name, source, str(path))
            else:
                built = build_kernel(KernelToBuild(kernel.name, str(path), source, kernel.launch))
        except Exception as error:  # noqa: BLE001 - stored with the kernel, the others go on
            message = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            store.asm.write(kernel, None, message[:1000], time.perf_counter() - kernel_started)
            summary.failed.append(f"{kernel.name}: {message[:300]}")
            continue
        store.asm.write(kernel, built)
        summary.built += 1
        summary.kernel_seconds.append(built.build_seconds)
    summary.seconds = time.perf_counter() - started
    return summary
