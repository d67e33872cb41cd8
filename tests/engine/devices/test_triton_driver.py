"""The Triton driver that answers "an sm_90 CUDA GPU" on a machine without one
(engine/devices/triton_driver.py): installed, Triton's active driver reports the sm_90
target and an H100's properties, and Triton's own CUDABackend is what codegen gets;
restored, the driver Triton had before is back, as it was (on this machine: none, so
asking for one fails again)."""
from __future__ import annotations

import pytest

from kernelscope.engine import patch_points
from kernelscope.engine.devices import triton_driver
from kernelscope.engine.patching import Patches

triton = pytest.importorskip("triton")


def _driver_config():
    import triton.runtime

    return triton.runtime.driver  # the DriverConfig whose `_active` the patch point names


def test_the_driver_answers_as_an_h100():
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    driver = triton_driver.make_driver()
    assert isinstance(driver, DriverBase) and driver.is_active()
    assert driver.get_current_target() == GPUTarget("cuda", 90, 32)
    assert driver.get_device_capability() == (9, 0) and driver.get_current_device() == 0
    assert driver.get_active_torch_device() == torch.device("cuda", 0)
    assert driver.get_device_interface() is torch.cuda and driver.get_current_stream() == 0
    properties = driver.utils.get_device_properties(0)
    assert properties == triton_driver.H100_PROPERTIES and properties["multiprocessor_count"] == 132
    properties["multiprocessor_count"] = 1  # a copy: the next caller sees the H100's again
    assert driver.utils.get_device_properties(0)["multiprocessor_count"] == 132
    benchmark = driver.get_benchmarker()  # nothing can be launched: nothing is timed
    assert benchmark(lambda: None) == 0.0 and benchmark(lambda: None, quantiles=[0.5, 0.2, 0.8]) == [0.0] * 3
    assert triton_driver.make_driver(80).get_current_target() == GPUTarget("cuda", 80, 32)


@pytest.mark.parametrize("point", [patch_points.TRITON_ACTIVE_DRIVER, patch_points.CPU_TRITON_ACTIVE_DRIVER],
                         ids=["virtual-cuda", "cpu-triton"])
def test_installed_triton_reports_sm_90_and_restored_it_has_no_driver_again(point):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    config = _driver_config()
    before = vars(config).get("_active")
    if before is None:  # a machine without a GPU: Triton finds no active driver
        with pytest.raises(RuntimeError, match="0 active drivers"):
            _ = config.active
    with Patches() as patches:
        triton_driver.install(patches, point)
        target = config.active.get_current_target()
        assert target == GPUTarget("cuda", 90, 32)
        backend = make_backend(target)  # what Triton compiles with: its own CUDA backend for sm_90
        assert type(backend).__name__ == "CUDABackend" and backend.target.arch == 90
    assert vars(config).get("_active") is before
    if before is None:
        with pytest.raises(RuntimeError, match="0 active drivers"):
            _ = config.active


def test_the_previous_driver_is_put_back_as_it_was(monkeypatch):
    config = _driver_config()
    previous = object()  # what a GPU machine's driver would be: put back, never reset or re-created
    monkeypatch.setattr(config, "_active", previous)
    with Patches() as patches:
        triton_driver.install(patches, patch_points.TRITON_ACTIVE_DRIVER, arch=80)
        assert config.active is not previous and config.active.get_device_capability() == (8, 0)
    assert config._active is previous
