"""The no-op CUDA device guard for CPU-only builds of torch (engine/devices/cuda_guard.py).

Python indexing of a tensor takes a device guard on its device; on a fake cuda tensor of a
CPU-only build there is none ("PyTorch is not linked with support for cuda devices") until
`ensure_cuda_device_guard()` copies the Meta device's no-op guard into CUDA's slot of c10's
registry. The guard, once in, stays for the process: the before/after test runs in a fresh
interpreter. Where a step cannot be taken, nothing is changed and the reason is given."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from kernelscope.engine.devices import cuda_guard

BEFORE_AND_AFTER = textwrap.dedent('''
    import json
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from kernelscope.engine.devices import cuda_guard


    def index_a_fake_cuda_tensor():
        with FakeTensorMode():
            x = torch.empty(4, 3, device="cuda")
            picked = x[torch.tensor([0, 2], device="cuda")]  # Python indexing: a CUDA device guard
            x[1] = 1.0
            return str(picked.device), list(picked.shape)


    def attempt():
        try:
            return index_a_fake_cuda_tensor()
        except RuntimeError as error:
            return str(error).splitlines()[0]


    cuda_slot, meta_slot = cuda_guard._slots()
    report = {"cuda_build": torch.backends.cuda.is_built(), "problem": cuda_guard.registry_problem(),
              "slot_before": cuda_slot.value, "before": attempt(),
              "ensure": cuda_guard.ensure_cuda_device_guard(), "again": cuda_guard.ensure_cuda_device_guard()}
    report.update(after=attempt(), slot_is_meta=cuda_slot.value == meta_slot.value and meta_slot.value is not None)
    print(json.dumps(report))
''')


def test_the_registry_can_take_the_guard_on_this_torch():
    assert cuda_guard.registry_problem() is None


def test_a_fake_cuda_tensor_is_indexed_after_the_guard_is_installed(tmp_path):
    import torch

    if torch.backends.cuda.is_built():
        pytest.skip("a CUDA build has its own guard (FakeTensorMode swaps in a no-op one): nothing to install")
    script = tmp_path / "guard.py"
    script.write_text(BEFORE_AND_AFTER)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["cuda_build"] is False and report["problem"] is None
    # a CPU-only build has no CUDA guard: indexing a fake cuda tensor fails
    assert report["slot_before"] is None
    assert report["before"] == "PyTorch is not linked with support for cuda devices"
    # installed (and installing again changes nothing): it indexes as on a GPU
    assert report["ensure"] is None and report["again"] is None
    assert report["slot_is_meta"] is True
    assert report["after"] == ["cuda:0", [2, 3]]


def _fake_slots(cuda, meta):
    def slots():
        return ctypes.c_void_p(cuda), ctypes.c_void_p(meta)

    return slots


@pytest.mark.parametrize("broken, why", [
    ("library", "no CUDA device guard on this CPU build of torch (libc10.so: cannot open shared object file)"),
    ("no meta guard", "no CUDA device guard on this CPU build of torch (the Meta guard is missing too)"),
])
def test_where_the_guard_cannot_be_installed_nothing_changes_and_the_reason_is_given(monkeypatch, broken, why):
    import torch

    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)
    if broken == "library":
        def slots():
            raise OSError("libc10.so: cannot open shared object file")
    else:
        slots = _fake_slots(None, None)
    monkeypatch.setattr(cuda_guard, "_slots", slots)
    assert cuda_guard.registry_problem() == why
    assert cuda_guard.ensure_cuda_device_guard() == why


def test_a_slot_already_taken_is_left_as_it_is(monkeypatch):
    import torch

    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)
    cuda_slot, meta_slot = ctypes.c_void_p(0x1000), ctypes.c_void_p(0x2000)
    monkeypatch.setattr(cuda_guard, "_slots", lambda: (cuda_slot, meta_slot))
    assert cuda_guard.ensure_cuda_device_guard() is None
    assert (cuda_slot.value, meta_slot.value) == (0x1000, 0x2000)
    empty_slot = ctypes.c_void_p(None)
    monkeypatch.setattr(cuda_guard, "_slots", lambda: (empty_slot, meta_slot))
    assert cuda_guard.ensure_cuda_device_guard() is None
    assert empty_slot.value == 0x2000  # the Meta device's guard, copied


def test_a_cuda_build_needs_no_guard(monkeypatch):
    import torch

    def never():
        raise AssertionError("a CUDA build's registry is never read")

    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(cuda_guard, "_slots", never)
    assert cuda_guard.registry_problem() is None and cuda_guard.ensure_cuda_device_guard() is None
