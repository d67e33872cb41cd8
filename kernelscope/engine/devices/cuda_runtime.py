"""What `torch.cuda` (and `torch.accelerator`) answers a virtual-cuda program: one emulated GPU.

A program that runs under virtual-cuda (`cuda_program`) asks torch.cuda what a training
script asks; each answer is installed through the patch register (patch_points, feature
"virtual-cuda program", plus virtual-cuda's own device queries) and put back when the
program ends. What each call returns (docs/targets.md, "Your GPU program, unmodified"):
- the device: available, one device (index 0), the emulated H100's name, capability
  (9, 0) and properties (`virtual_cuda._device_properties`), bf16 and tf32 supported,
  `set_device(0)` and `torch.cuda.device(0)` accepted, arch list `["sm_90"]`; a rank torchrun
  started sees one device per local rank (`set_device(local_rank)` accepted and answered by
  `current_device()`), its tensors on its one virtual GPU, `cuda:0` (real_ranks);
- `synchronize()` returns at once: the work already ran on the CPU;
- random numbers: the virtual GPU has no generator of its own; its random ops draw from
  the CPU's, so `torch.cuda.manual_seed(_all)` seeds the CPU generator, `seed()` and
  `initial_seed()` are the CPU's, `get_rng_state()`/`set_rng_state()` read and write the
  CPU generator's state (values differ from a GPU's Philox streams, but a seeded program is
  reproducible run to run);
- streams and events (`Stream`, `Event`, `current_stream`, `default_stream`, `stream(...)`,
  `set_stream`): one ordered queue, as the work runs in program order on the CPU; waits and
  queries return at once; an event made with `enable_timing=True` records the CPU clock,
  and `elapsed_time` gives milliseconds between two records;
- memory statistics: the virtual GPU allocates nothing (tensors live in CPU memory, and the
  eager run's memory is not what the compiled program would use on the GPU), so
  `memory_allocated`, `max_memory_allocated`, `memory_reserved`, `max_memory_reserved` are
  0, `memory_stats()` is a dict of zeros, `mem_get_info()` is (80 GiB free, 80 GiB total),
  `reset_peak_memory_stats`, `empty_cache` and the like do nothing;
- `torch.cuda.nvtx` ranges and marks do nothing;
- `torch.accelerator`: cuda, one device, index 0, `synchronize` returns at once.
"""
from __future__ import annotations

import collections
import time

from kernelscope.engine import patch_points as points
from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.devices.virtual_gpu_tensor import virtual_device
from kernelscope.engine.patching import Patches

_TOTAL_MEMORY = 80 * 2**30


def _stream_classes():
    """(Stream, Event, StreamContext) of the emulated GPU."""
    class Stream:
        """A stream of the virtual GPU: the work runs in program order, so it waits for nothing."""

        def __init__(self, device=None, priority=0, **kwargs):
            self.device = virtual_device()
            self.priority = priority
            self.stream_id = id(self)
            self.cuda_stream = 0

        def wait_event(self, event):
            return None

        def wait_stream(self, stream):
            return None

        def record_event(self, event=None):
            event = event if event is not None else Event()
            event.record(self)
            return event

        def query(self):
            return True

        def synchronize(self):
            return None

        def is_capturing(self):
            return False

        def __enter__(self):
            self._context = StreamContext(self)
            self._context.__enter__()
            return self

        def __exit__(self, *exc):
            self._context.__exit__(*exc)
            return False

        def __repr__(self):
            return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x} (virtual)>"

    class Event:
        """An event of the virtual GPU: `record` notes the CPU clock (with `enable_timing`)."""

        def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
            self.enable_timing = enable_timing
            self._time = None

        def record(self, stream=None):
            self._time = time.perf_counter()

        def wait(self, stream=None):
            return None

        def query(self):
            return True

        def synchronize(self):
            return None

        def elapsed_time(self, end_event):
            if not (self.enable_timing and end_event.enable_timing):
                raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
            if self._time is None or end_event._time is None:
                raise RuntimeError("Both events must be recorded before calculating elapsed time.")
            return (end_event._time - self._time) * 1000.0

        def __repr__(self):
            return "<torch.cuda.Event (virtual)>"

    current: list = []
    default = Stream()

    class StreamContext:
        """`torch.cuda.stream(s)`: `s` is the current stream while inside."""

        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            current.append(self.stream if self.stream is not None else current_stream())
            return self.stream

        def __exit__(self, *exc):
            current.pop()
            return False

    def current_stream(device=None):
        return current[-1] if current else default

    def default_stream(device=None):
        return default

    def set_stream(stream):
        if current:
            current[-1] = stream
        else:
            current.append(stream)

    return Stream, Event, StreamContext, current_stream, default_stream, set_stream


def _nvtx_stub():
    class Nvtx:
        """torch.cuda.nvtx on the virtual GPU: every range and mark does nothing."""

        def __getattr__(self, name):
            return lambda *args, **kwargs: 0

    return Nvtx()


def _memory_stats():
    stats: dict = collections.defaultdict(int)
    stats["num_alloc_retries"] = 0
    return stats


def _device_selection(devices: int):
    """(device_count, current_device, set_device) of a program that sees `devices` GPUs (a rank
    torchrun started: one per local rank, real_ranks) and works on its one virtual GPU: the index
    set is answered back, an index past the count is refused as CUDA refuses it."""
    import torch

    selected = [0]

    def set_device(device):
        index = torch.cuda._utils._get_device_index(device, optional=True)
        if index < 0:
            return
        if index >= devices:
            raise RuntimeError(f"CUDA error: invalid device ordinal (device {index}; this rank sees {devices} "
                               f"virtual GPU{'s' if devices > 1 else ''}: 0 to {devices - 1})")
        selected[0] = index

    return (lambda: devices), (lambda: selected[0]), set_device


def install(patches: Patches, devices: int = 1) -> None:
    """Every torch.cuda and torch.accelerator answer above, put back when `patches` ends. `devices`:
    how many GPUs the program sees (a rank torchrun started sees its host's: real_ranks)."""
    import torch

    from kernelscope.engine.devices.virtual_cuda import _device_properties, device_answers

    props = _device_properties()
    Stream, Event, StreamContext, current_stream, default_stream, set_stream = _stream_classes()
    device_count, current_device, set_device = _device_selection(devices)

    def manual_seed(seed):
        torch.default_generator.manual_seed(int(seed))

    def set_rng_state(new_state, device="cuda"):
        with torch._C.DisableTorchFunctionSubclass():
            torch.default_generator.set_state(new_state.as_subclass(torch.Tensor).clone())

    device_queries = {  # virtual-cuda's own points, as the compile patches them too
        **device_answers(props),
        "device_count": device_count,
        "current_device": current_device,
        "set_device": set_device,
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": set_rng_state,
    }
    program_answers = {
        "is_initialized": lambda: True,
        "init": lambda: None,
        "is_tf32_supported": lambda: True,
        "get_arch_list": lambda: [f"sm_{props.major}{props.minor}"],
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed,
        "seed": lambda: torch.default_generator.seed(),
        "seed_all": lambda: torch.default_generator.seed(),
        "initial_seed": lambda: torch.default_generator.initial_seed(),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state_all": lambda new_states: set_rng_state(new_states[0]),
        "mem_get_info": lambda device=None: (_TOTAL_MEMORY, _TOTAL_MEMORY),
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
        "reset_max_memory_allocated": lambda device=None: None,
        "reset_accumulated_memory_stats": lambda device=None: None,
        "memory_stats": lambda device=None: _memory_stats(),
        "memory_summary": lambda device=None, abbreviated=False: "virtual GPU (kernelscope virtual-cuda): "
                                                                 "nothing allocated on a device",
        "empty_cache": lambda: None,
        "ipc_collect": lambda: None,
        "set_per_process_memory_fraction": lambda fraction, device=None: None,
        "Stream": Stream,
        "Event": Event,
        "StreamContext": StreamContext,
        "stream": StreamContext,
        "current_stream": current_stream,
        "default_stream": default_stream,
        "set_stream": set_stream,
        "is_current_stream_capturing": lambda: False,
    }
    accelerator = {
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "device_count": device_count,
        "current_device_index": current_device,
        "current_device_idx": current_device,
        "set_device_index": set_device,
        "set_device_idx": set_device,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: current_stream(),
        "set_stream": set_stream,
    }
    for name, answer in device_queries.items():
        patches.replace(points.CUDA_QUERIES[name], answer)
    for name, answer in program_answers.items():
        patches.replace(program_points.PROGRAM_CUDA[name], answer)
    for name, answer in accelerator.items():
        if program_points.PROGRAM_ACCELERATOR[name].holds():
            patches.replace(program_points.PROGRAM_ACCELERATOR[name], answer)
    patches.replace(program_points.PROGRAM_NVTX, _nvtx_stub())
