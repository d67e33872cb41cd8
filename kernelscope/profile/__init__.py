"""GPU profiling: device time from a torch.profiler chrome trace, joined to a run's
kernels, extern calls and source lines. Pure Python, no torch (the `--profile`
runner that makes a trace is engine code: kernelscope/engine/profiling.py). `memory_join`:
a measured step's allocation frames joined to wrapper lines (`--memory`, docs/memory.md)."""
from kernelscope.profile.join import JoinResult, ProfileMismatch, RunGraph, RunKernel, join
from kernelscope.profile.trace import Trace, TraceError, load_trace

__all__ = ["JoinResult", "ProfileMismatch", "RunGraph", "RunKernel", "Trace", "TraceError", "join", "load_trace"]
