"""A Triton driver that answers "an sm_90 CUDA GPU" on a machine without one.

The triton wheel's nvidia and amd backends report inactive without a GPU, and any
Inductor Triton codegen then fails with "0 active drivers". Codegen only asks the
driver for its target and a few device properties, which this driver supplies;
`make_backend` then yields Triton's own CUDABackend, so kernels are exactly the
ones Inductor would write for an H100-class GPU. Nothing can be launched.
"""
from __future__ import annotations

from kernelscope.engine.devices.virtual_gpu_tensor import device_index, virtual_device

H100_ARCH = 90

# Properties Inductor and Triton read from `utils.get_device_properties`.
H100_PROPERTIES = {
    "max_shared_mem": 232448,
    "multiprocessor_count": 132,
    "max_num_regs": 65536,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
    "max_threads_per_block": 1024,
}


def make_driver(arch: int = H100_ARCH):
    """Build the driver lazily so that importing this module does not import triton."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class _Utils:
        def get_device_properties(self, device):
            return dict(H100_PROPERTIES)

    class VirtualCudaDriver(DriverBase):
        def __init__(self):
            self.utils = _Utils()

        @classmethod
        def is_active(cls):
            return True

        def get_current_device(self):
            return device_index()

        def set_current_device(self, device):
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_device_capability(self, device=None):
            return (arch // 10, arch % 10)

        def map_python_to_cpp_type(self, ty):
            return ty

        def get_current_target(self):
            return GPUTarget("cuda", arch, 32)

        def get_active_torch_device(self):
            return virtual_device()

        def get_device_interface(self):
            return torch.cuda

        def get_benchmarker(self):
            def benchmark(fn, quantiles=None, **kwargs):
                return [0.0, 0.0, 0.0] if quantiles else 0.0

            return benchmark

    return VirtualCudaDriver()


def install(patches, point, arch: int = H100_ARCH) -> None:
    """Make the virtual driver Triton's active driver (`point`: patch_points'
    TRITON_ACTIVE_DRIVER or CPU_TRITON_ACTIVE_DRIVER) until `patches` (patching.Patches)
    is restored. Not reset_active() on the way out: that would create the default driver,
    which fails without a GPU; the previous one is put back as it was."""
    patches.replace(point, make_driver(arch))
