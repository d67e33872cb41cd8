"""Fidelity of the C++ kernels of Inductor's CPU backend (`--target cpu`) on the model suite
(bench/suite/): a small but real subset, two families (bench/suite/registry.CPU_MODELS' conv
and encoder models), inference and training, compiled and run on the CPU.

Floors (issue 36, bench/suite.py CPU_FLOORS): every C++ kernel's node set equals Inductor's
own mapping, every post-grad node traced to a source line, at least 95% of kernel body lines
and wrapper lines attributed. The whole table, every family: `python bench/suite.py --target
cpu` (docs/targets.md). Each model is recorded once per test session (conftest's
`recordings`) and shared by the tests below; each compiles its kernels with the system's C++
compiler."""
from __future__ import annotations

import pytest
from test_suite import registry, suite_cli  # bench/suite.py and its registry, loaded there once

from kernelscope.run_record import SHARED_LINE_REASON_PREFIX
from kernelscope.store.writing.coverage import compute_coverage

pytestmark = pytest.mark.slow

FAMILIES = ("conv", "encoder")
CASES = [(family, train) for family in FAMILIES for train in (False, True)]
IDS = [f"{registry.CPU_MODELS[family]}-{'train' if train else 'inference'}" for family, train in CASES]


def recorded(recordings, family: str, train: bool):
    model = registry.BY_NAME[registry.CPU_MODELS[family]]
    return recordings.get_spec(model.spec(train), device="cpu", train=train)


@pytest.mark.parametrize("family, train", CASES, ids=IDS)
def test_suite_model_meets_the_cpu_floors(recordings, family, train):
    run = recorded(recordings, family, train)
    assert run.device == "cpu" and run.provenance == "line" and not run.warnings
    assert [g.kind for g in run.graphs] == (["forward", "backward"] if train else ["inference"])
    coverage = compute_coverage(run)
    for key, floor in suite_cli.CPU_FLOORS.items():
        share = coverage[key]["share"]
        if key == "backward_nodes_with_source" and not train:
            assert share is None  # an inference run has no backward graph
            continue
        assert share is not None and share >= floor, f"{family} {train}: {key} {coverage[key]}"
    assert coverage["kernel_agreement"]["excluded"] == 0  # Inductor mapped every C++ kernel


@pytest.mark.parametrize("family, train", CASES, ids=IDS)
def test_every_cpp_kernel_links_its_loop_body_to_its_own_nodes(recordings, family, train):
    """Kernel lines are counted as attributed when they link to the whole kernel, as its set-up
    does; here each kernel's loop code was found in its source and linked line by line: some
    of its lines (loads, computations, stores) to the node that wrote them, one per call of
    the kernel (a layer norm's kernel called for each layer links each line to each layer's
    node), never to a node outside the kernel."""
    run = recorded(recordings, family, train)
    kernels = [k for g in run.graphs for k in g.kernels if k.kind != "extern"]
    assert len(kernels) >= 3 and all(k.kind == "cpp" for k in kernels)  # the CPU's C++ kernels, no Triton
    for kernel in kernels:
        assert kernel.source and kernel.lines, kernel.name
        assert set(kernel.nodes) == set(kernel.inductor_nodes), kernel.name
        assert any(not line.reason.startswith(SHARED_LINE_REASON_PREFIX) for line in kernel.lines), kernel.name
        assert all(line.nodes and set(line.nodes) <= set(kernel.nodes) for line in kernel.lines), kernel.name
