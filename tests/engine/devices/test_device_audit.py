"""Every device query Inductor and AOTAutograd make while virtual-cuda compiles is answered cuda.

virtual-cuda compiles on fake cuda tensors (devices/fake_cuda.py), so a device decision
torch makes in Python is the GPU's by construction. This audit records, during real
recordings of the examples and of zoo models (inference and training), every Python
device query on the compile's own fake tensors (`t.device`, `t.is_cuda`,
`t.get_device()`, and so `node.meta["val"].device`, `is_gpu(t.device.type)`) and fails
when one is answered `cpu` — e.g. when a new torch version creates a tensor on the CPU
where a GPU has it on cuda, or reads a device from somewhere the fake tensors don't
reach — 0-dim and empty tensors included: none of these recordings has dynamic shapes,
so no Python number becomes a CPU scalar, and on an H100 every scalar and empty tensor
of them is a cuda tensor (`bench/gpu_check.py`'s audit). These recordings are the
test's own (the audit must be on while they run).
"""
from __future__ import annotations

import pytest
from conftest import EXAMPLES, REPO, ZOO

CASES = [
    (f"{EXAMPLES / 'mlp.py'}:make", True),
    (f"{EXAMPLES / 'attention.py'}:make", False),
    (f"{EXAMPLES / 'conv_bn.py'}:make", True),
    (f"{EXAMPLES / 'graph_break.py'}:make", True),
    (f"{ZOO / 'small_cnn.py'}:make_train", True),
    (f"{ZOO / 'moe.py'}:make_bf16_train", True),
    (f"{ZOO / 'gpt2.py'}:make_train", True),
    (f"{ZOO / 'llama.py'}:make", False),
]


def record_with_audit(spec: str, train: bool):
    from kernelscope.engine.devices.device_audit import log_device_queries
    from kernelscope.engine.recorder import RecordOptions, record_factory

    with log_device_queries() as log:
        run = record_factory(spec, RecordOptions(device="virtual-cuda", train=train, workspace=REPO))
    return run, log


@pytest.mark.slow
@pytest.mark.parametrize("spec, train", CASES, ids=[f"{c[0].rsplit('/', 1)[1]}{' train' if c[1] else ''}"
                                                     for c in CASES])
def test_every_device_query_is_answered_cuda(spec, train):
    run, log = record_with_audit(spec, train)
    assert run.graphs
    answered_cuda = sum(n for (kind, answer, module, shape), n in log.python.items() if answer == "cuda")
    assert answered_cuda > 100, log.summary()  # the audit saw the compile
    asked_by_inductor = {module for (kind, answer, module, shape) in log.python if module.startswith("torch._inductor")}
    assert asked_by_inductor, "no query from Inductor was recorded"
    answered_cpu = log.answered("cpu", all_shapes=True)
    assert not answered_cpu, f"device queries answered cpu: {dict(answered_cpu)}"


def test_the_audit_counts_only_while_active_and_only_the_compiles_own_tensors():
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from kernelscope.engine.devices import device_audit, fake_cuda, virtual_cuda

    compile_mode, other_mode = FakeTensorMode(), FakeTensorMode()
    with virtual_cuda.pretend_cuda_present(), fake_cuda.cuda_fake_tensors():
        with compile_mode:
            ours = torch.empty(3, 2, device="cuda")
            on_cpu = torch.empty(3, 2)
        with other_mode:
            theirs = torch.empty(3, 2, device="cuda")
        _ = ours.device  # not logging yet
        with device_audit.log_device_queries() as log, device_audit.compiling_with(compile_mode):
            assert ours.device.type == "cuda" and ours.is_cuda and ours.get_device() == 0
            assert on_cpu.device.type == "cpu"
            _ = theirs.device  # another fake mode (pattern set-up): not the compile's
    kinds = sorted((kind, answer) for (kind, answer, module, shape) in log.python)
    assert kinds == [("device", "cpu"), ("device", "cuda"), ("get_device", "cuda"), ("is_cuda", "cuda")]
    assert dict(log.answered("cpu")) == {("device", "test_device_audit.py"): 1}
