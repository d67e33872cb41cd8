"""What one recording needs in this process, and sets up while it lasts.

`import_torch` imports torch and Inductor for a recording (refusing a torch older than the
engine accepts; cpu-triton `--execute` first switches Triton's interpreter on).
`Recording` is the context around the user's code: it checks the patch points of
features that cannot work in part, makes Inductor generate every graph afresh (fresh
caches, provenance tracking on, compiles in-process), numbers graphs from zero, enters the
device target (devices/device_target.py) and, on `--target cuda`, records the GPU's
timing decisions and launch configs; then installs the structured-trace capture, the
distributed probes, the line-level probes and the upstream fixes. What it saw becomes a
run in run_assembly.py.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings

from kernelscope.engine import patch_points, torch_compat
from kernelscope.engine.devices.device_target import device_target
from kernelscope.engine.record_options import RecordOptions
from kernelscope.errors import UserError

MIN_TORCH = torch_compat.MIN_TORCH


def import_torch(options: RecordOptions) -> float:
    """Import torch and Inductor; returns the seconds it took (0 if already imported)."""
    if options.device == "cpu-triton":
        from kernelscope.engine.devices import cpu_triton

        if options.execute and "torch._inductor.runtime.triton_helpers" in sys.modules \
                and os.environ.get(cpu_triton.INTERPRET_ENV) != "1":
            raise UserError(
                "--execute needs Triton's interpreter, which must be enabled before torch's "
                "Triton helpers are imported: run `kernelscope compile` in a fresh process"
            )
        cpu_triton.prepare_process(options.execute)
    started = time.perf_counter()
    already = "torch._inductor.compile_fx" in sys.modules
    options.on_phase("import", "torch")
    try:
        import torch
        import torch._inductor.compile_fx  # noqa: F401
    except ImportError as error:
        raise UserError(
            f"kernelscope's engine needs PyTorch {MIN_TORCH[0]}.{MIN_TORCH[1]} or newer in this "
            f"Python ({sys.executable}): {error}"
        ) from error
    if not torch_compat.holds("supported torch"):
        raise UserError(
            f"torch {torch.__version__} is too old: kernelscope needs torch "
            f"{MIN_TORCH[0]}.{MIN_TORCH[1]} or newer (pip install -U torch)"
        )
    return 0.0 if already else time.perf_counter() - started


class Recording:
    """Context manager around the user's code: everything that makes a recording."""

    def __init__(self, device: str, options: RecordOptions):
        from kernelscope.engine.distributed_probes import DistributedProbes
        from kernelscope.engine.probes import Probes
        from kernelscope.engine.trace_capture import TraceCapture
        from kernelscope.engine.why_probes import WhyProbes

        self.device = device
        self.options = options
        self.probes = Probes()
        self.distributed = DistributedProbes(options.job)
        self.trace = TraceCapture()
        self.why = WhyProbes(self.probes.current_graph) if options.why else None
        self.probes.on_phase = options.on_phase
        self.probes.trace_position = lambda: len(self.trace.records)
        self._stack = contextlib.ExitStack()
        self.device_warnings: list[str] = []
        self.autotuners: list | None = None  # --target cuda: Inductor's autotuners, read after the run
        self.decisions = _decision_log(device, options)
        self.numerics = None  # numerics/capture.py's NumericsCapture, for `kernelscope numerics`
        self.eager_nodes: list[str] = []  # post-grad nodes a numerics recompile left to eager
        self.graph_keys: dict[int, str] = {}  # id(GraphCapture) -> its graph's key (run_assembly)
        self.aot_package = None  # `--aot`: the package engine/aot_build.py wrote (run_record.AotPackage)

    def __enter__(self):
        # What cannot work in part is checked before anything is set up (patch_points.require).
        patch_points.require("recording", "nothing was recorded")
        if self.device in ("virtual-cuda", "cpu-triton"):
            patch_points.require(self.device, "nothing was recorded")
        try:
            return self._set_up()
        except BaseException:
            self._stack.close()
            raise

    def _set_up(self):
        import torch
        import torch._inductor.config as inductor_config
        from torch._inductor.utils import fresh_cache

        from kernelscope.engine import torch_fixes

        stack = self._stack
        stack.enter_context(_quiet_recording_warnings())
        torch._dynamo.reset()
        stack.callback(torch._dynamo.reset)
        stack.enter_context(_counters_from_zero())
        # A cache hit would skip codegen and leave provenance silently missing:
        # every recorded graph is generated afresh, in a throw-away cache directory.
        stack.enter_context(fresh_cache())
        stack.enter_context(
            inductor_config.patch(
                {
                    "force_disable_caches": True,
                    "compile_threads": 1,
                    "trace.provenance_tracking_level": 1,
                    # `--cpp-wrapper`: Inductor's C++ wrapper (AOTInductor sets it itself)
                    **({"cpp_wrapper": True} if self.options.cpp_wrapper else {}),
                }
            )
        )
        self.device_warnings = stack.enter_context(device_target(self.device, self.options.execute, self.decisions))
        if self.device == "cuda":
            from kernelscope.engine import asm_launches
            from kernelscope.engine.decision_hooks import session

            self.autotuners = stack.enter_context(asm_launches.autotuners_seen(self.device_warnings))
            stack.enter_context(session.recording(self.decisions))
        stack.enter_context(self.trace)
        stack.enter_context(self.distributed)  # first: its wrappers keep torch's signatures
        stack.enter_context(self.probes)
        if self.why is not None:
            stack.enter_context(self.why)
        self.fixes = stack.enter_context(torch_fixes.upstream_fixes())
        if self.options.numerics:
            from kernelscope.engine.numerics import capture, fallback

            self.eager_nodes = stack.enter_context(
                fallback.numerics_config(self.options.eager_lines, self.options.emulate_precision_casts))
            self.numerics = stack.enter_context(capture.NumericsCapture(self.probes))
        return self

    def __exit__(self, *exc):
        self._stack.close()


def _decision_log(device: str, options: RecordOptions):
    """The log of the recording's timing decisions; virtual-cuda replays `options.decisions`."""
    from kernelscope.engine.decision_hooks.log import DecisionLog

    chosen = options.decisions
    if chosen is not None and chosen.explicit and device != "virtual-cuda":
        why = ("on a GPU, Inductor times them itself" if device == "cuda"
               else "cpu-triton makes no GPU timing decisions")
        raise UserError(f"--decisions {chosen.source} replays a GPU's timing decisions under virtual-cuda; "
                        f"this run's target is {device} ({why}): drop --decisions, or use --target virtual-cuda")
    return DecisionLog(chosen if device == "virtual-cuda" else None)


@contextlib.contextmanager
def _counters_from_zero():
    """Number AOT graph ids and Inductor's provenance debug handles from zero, so two
    recordings of one model in one process (a warm worker) generate identical code."""
    import itertools

    import torch._functorch.aot_autograd as aot_autograd
    import torch._inductor.debug as inductor_debug

    if patch_points.AOT_COUNTER.present():  # reset for good: nothing to put back
        aot_autograd.AOT_COUNTER = itertools.count()
    reset = getattr(inductor_debug, "reset_provenance_globals", None)
    with reset() if reset is not None else contextlib.nullcontext():
        if hasattr(inductor_debug, "reset_inductor_kernel_provenance_debug_handle"):
            inductor_debug.reset_inductor_kernel_provenance_debug_handle()
        yield


@contextlib.contextmanager
def _quiet_recording_warnings():
    """Silence the warnings our own recording set-up causes (not the user's)."""
    with warnings.catch_warnings():
        # We disable caches on purpose (fresh codegen), which also disables PGO.
        warnings.filterwarnings("ignore", message=".*dynamo_pgo force disabled.*")
        # virtual-cuda reports an sm_90 device; the TF32 hint is about a real GPU run.
        warnings.filterwarnings("ignore", message=".*TensorFloat32 tensor cores.*")
        yield
