"""The one patching mechanism (engine/patching.py): every patch point declared once
(patch_points.py) and checked on the installed torch, ATen ports with drift checks
(ports.py), version gates (torch_compat.py), `kernelscope doctor --torch`, and no
`unittest.mock` in production code.

A point that does not hold is simulated with objects of this module (a fake owner), never
by breaking torch."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPO

# -- a fake owner for the patch points of these tests -------------------------------------------


class Lowering:
    """Stands for an Inductor class: `codegen(self, wrapper)`."""

    def codegen(self, wrapper):
        return f"code for {wrapper}"

    @staticmethod
    def helper(value):
        return value + 1


class SubLowering(Lowering):
    """Inherits codegen and helper: a patch must not leave them defined here."""


def fake_point(attribute="codegen", owner="test_patching.Lowering", **expect):
    from kernelscope.engine.patching import PatchPoint

    return PatchPoint("line provenance", owner, attribute, "a test point", **expect)


# -- every declared point, port and gate on the installed torch ----------------------------------


def test_every_declared_patch_point_holds_on_the_installed_torch():
    from kernelscope.engine import patch_points

    problems = {point.name: point.check() for point in patch_points.POINTS if point.check()}
    assert problems == {}
    # one declaration per (feature, place): a second would be a second source of truth
    keys = [(point.feature, point.name) for point in patch_points.POINTS]
    assert len(keys) == len(set(keys)) and len(keys) >= 100


def test_every_port_is_ok_on_the_installed_torch():
    from kernelscope.engine import ports, torch_compat

    statuses = {port.name: port.status() for port in ports.PORTS}
    assert {name: status for name, (status, _) in statuses.items() if status == "broken"} == {}
    if "{}.{}".format(*torch_compat.torch_version()) == "2.13":  # the CI torch is a checked one
        assert {status for status, _ in statuses.values()} == {"ok"}, statuses


def test_a_port_whose_schema_or_behaviour_drifted_is_broken(monkeypatch):
    from kernelscope.engine import ports
    from kernelscope.engine.devices import fake_cuda

    by_name = {port.name: port for port in ports.PORTS}
    changed = ports.SCHEMAS["_batch_norm_impl_index"].replace("bool cudnn_enabled", "bool use_cudnn")
    monkeypatch.setitem(ports.SCHEMAS, "_batch_norm_impl_index", changed)
    status, why = by_name["BatchNorm backend"].status()
    assert status == "broken" and "aten::_batch_norm_impl_index's schema changed" in why

    always_copies = lambda self, *args, **kwargs: self.clone()  # noqa: E731 - a port gone wrong
    monkeypatch.setattr(fake_cuda, "_to_python", always_copies)
    status, why = by_name["Tensor.to"].status()
    assert status == "broken" and "decides differently from ATen" in why


def test_a_stand_in_that_no_longer_takes_the_ops_arguments_is_found():
    from kernelscope.engine import ports

    def stand_in(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False):
        return None  # lost the keyword-only `scale`

    assert "no longer matches aten::_scaled_dot_product_efficient_attention" in \
        ports.parameter_problems(stand_in, "_scaled_dot_product_efficient_attention")[0]


def test_a_port_outside_its_checked_versions_is_unverified(monkeypatch):
    from kernelscope.engine import ports, torch_compat

    monkeypatch.setattr(torch_compat, "torch_version", lambda: (2, 99))
    status, why = ports.PORTS[0].status()
    assert status == "unverified" and "not 2.99" in why


def test_version_gates_live_in_one_table():
    from kernelscope.engine import torch_compat

    assert torch_compat.in_range(">=2.11,<2.14", (2, 13)) and not torch_compat.in_range(">=2.11,<2.14", (2, 14))
    assert torch_compat.holds("sdpa: cuDNN dropout resolution", (2, 13))
    assert not torch_compat.holds("sdpa: cuDNN dropout resolution", (2, 11))
    assert torch_compat.version_tuple("2.14.1+cu130") == (2, 14)
    with pytest.raises(ValueError):
        torch_compat.in_range("~2.13")
    # nothing else in the engine compares torch versions
    engine = REPO / "kernelscope" / "engine"
    comparisons = [f"{path.relative_to(REPO)}:{number}"
                   for path in engine.rglob("*.py") if path.name != "torch_compat.py"
                   for number, line in enumerate(path.read_text().splitlines(), 1)
                   if re.search(r"version\w*\s*[<>]=?\s*\(\d|_version_tuple|__version__\.split", line)]
    assert comparisons == []


# -- the mechanism --------------------------------------------------------------------------------


def test_a_point_checks_presence_own_definition_and_parameters():
    assert fake_point(parameters=("self", "wrapper")).check() is None
    assert "no longer takes ('self', 'graph')" in fake_point(parameters=("self", "graph")).check()
    assert "is missing" in fake_point("emit").check()
    assert fake_point("emit", optional=True).check() is None and not fake_point("emit", optional=True).present()
    assert "no longer defined on SubLowering itself" in \
        fake_point(owner="test_patching.SubLowering", own=True).check()
    assert "test_patching.Moved is missing" in fake_point(owner="test_patching.Moved").check()


def test_patches_put_back_exactly_what_the_owner_held(monkeypatch):
    from kernelscope.engine.patching import Patches, PatchPointChanged

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    inherited = fake_point(owner="test_patching.SubLowering")
    static = fake_point("helper")
    with Patches() as patches:
        patches.wrap(inherited, lambda original: lambda self, wrapper: "patched " + original(self, wrapper))
        patches.replace(static, staticmethod(lambda value: value + 2))
        assert SubLowering().codegen("w") == "patched code for w" and Lowering.helper(1) == 3
        with pytest.raises(PatchPointChanged, match="no longer takes"):
            patches.replace(fake_point(parameters=("self", "graph")), None)
    assert "codegen" not in vars(SubLowering) and SubLowering().codegen("w") == "code for w"
    assert isinstance(vars(Lowering)["helper"], staticmethod) and Lowering.helper(1) == 2

    table = {"kept": 1}
    with Patches() as patches:
        patches.set_item(fake_point(), table, "added", 2)
        patches.set_item(fake_point(), table, "kept", 3)
        assert table == {"kept": 3, "added": 2}
    assert table == {"kept": 1}


def test_a_group_whose_point_does_not_hold_is_left_out_whole():
    from kernelscope.engine.patching import Patches, install_groups

    wrap = lambda original: lambda *args: "patched"  # noqa: E731
    with Patches() as patches:
        off = install_groups(patches, {
            "kept": [(fake_point("helper"), wrap)],
            "left_out": [(fake_point(parameters=("self", "wrapper")), wrap),
                         (fake_point(parameters=("self", "graph")), wrap)],
        })
        assert Lowering.helper(1) == "patched" and Lowering().codegen("w") == "code for w"
    assert off == ["left_out: Lowering.codegen('self', 'wrapper') no longer takes ('self', 'graph')"]
    assert Lowering.helper(1) == 2


@pytest.mark.slow
def test_a_line_probe_point_that_does_not_hold_switches_line_provenance_off_and_the_compile_records(monkeypatch):
    from kernelscope.engine import patch_points
    from kernelscope.engine.recorder import RecordOptions, record_factory

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    # Inductor's TritonScheduling as a later torch might have it: moved away.
    moved = dataclasses.replace(patch_points.DEFINE_KERNEL, owner="test_patching.Lowering", attribute="define_kernel")
    monkeypatch.setattr(patch_points, "DEFINE_KERNEL", moved)
    run = record_factory(f"{EXAMPLES / 'mlp.py'}:make", RecordOptions(workspace=REPO))
    assert run.provenance == "kernel" and run.graphs
    (warning,) = run.warnings
    assert warning.startswith("line-level provenance unavailable on torch ")
    assert "kernel-level only (kernel_lines: test_patching.Lowering.define_kernel is missing)" in warning
    triton = [kernel for graph in run.graphs for kernel in graph.kernels if kernel.kind == "triton"]
    assert len(triton) == 2 and all(set(kernel.nodes) == set(kernel.inductor_nodes) for kernel in triton)


def test_a_virtual_cuda_point_that_does_not_hold_stops_the_recording_before_it_compiles(monkeypatch, tmp_path):
    from kernelscope.engine import patch_points, patching
    from kernelscope.engine.recorder import RecordOptions, record_factory

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    moved = patching.PatchPoint("virtual-cuda", "test_patching.Lowering", "device", "a moved FakeTensor.device",
                                own=True)
    monkeypatch.setattr(patch_points, "POINTS", [*patch_points.POINTS, moved])
    compiled = []
    target = tmp_path / "model.py"
    target.write_text("import torch\n\ndef make():\n    return (lambda x: x.sin()), (torch.randn(4),)\n")
    monkeypatch.setattr("torch.compile", lambda *args, **kwargs: compiled.append(True))
    with pytest.raises(patching.PatchPointChanged) as raised:
        record_factory(f"{target}:make", RecordOptions(device="virtual-cuda", workspace=tmp_path))
    assert str(raised.value).startswith("virtual-cuda is unavailable on torch ")
    assert "test_patching.Lowering.device is no longer defined on Lowering itself" in str(raised.value)
    assert "doctor --torch" in str(raised.value)
    assert raised.value.exit_code == 3 and compiled == []


# -- kernelscope doctor --torch --------------------------------------------------------------------


def run_doctor(python=sys.executable, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([python, "-m", "kernelscope", "doctor", "--torch", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def check_doctor_json(done) -> dict:
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {"torch", "triton", "patch_points"}
    rows = report["patch_points"]
    assert all(set(row) == {"name", "feature", "kind", "status", "why"} for row in rows)
    assert {row["kind"] for row in rows} == {"patch", "port", "gate"}
    assert {row["status"] for row in rows} <= {"ok", "unverified", "broken"}
    assert [row for row in rows if row["kind"] == "patch" and row["status"] != "ok"] == []
    assert [row for row in rows if row["status"] == "broken"] == []
    assert all(row["why"] for row in rows)
    return report


def test_doctor_torch_json_lists_every_point_port_and_gate():
    import torch

    from kernelscope.engine import patch_points, ports, torch_compat

    report = check_doctor_json(run_doctor(sys.executable, "--json"))
    assert report["torch"] == torch.__version__
    kinds = [row["kind"] for row in report["patch_points"]]
    assert kinds.count("patch") == len(patch_points.POINTS) and kinds.count("port") == len(ports.PORTS)
    assert kinds.count("gate") == len(torch_compat.GATES)
    text = run_doctor()
    assert text.returncode == 0 and text.stdout.startswith(f"torch {torch.__version__}, triton ")
    assert "torch._inductor.graph.GraphLowering.codegen" in text.stdout


def test_doctor_torch_exits_non_zero_when_a_point_is_broken(monkeypatch, capsys):
    from kernelscope.cli import main
    from kernelscope.engine import patch_points

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.setattr(patch_points, "POINTS", [*patch_points.POINTS, fake_point("emit")])
    assert main(["doctor", "--torch", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["patch_points"]
    (broken,) = [row for row in rows if row["status"] == "broken"]
    assert broken["name"] == "test_patching.Lowering.emit" and "is missing" in broken["why"]
    assert "kernel-level" in broken["why"]  # what happens to the feature


# -- no unittest.mock in production code ------------------------------------------------------------


def test_no_unittest_mock_outside_tests():
    found = [f"{path.relative_to(REPO)}:{number}" for path in (REPO / "kernelscope").rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bunittest\.mock\b|from unittest import mock|\bmock\.patch\b|patch\.object\(", line)]
    assert found == []
