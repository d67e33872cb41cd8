"""The recording commands end to end (`compile`, `run`, then `query`), the other
device targets, and what a user sees when their model, Inductor or torch fails."""
from __future__ import annotations

import json
from unittest import mock

import pytest
from conftest import EXAMPLES, REPO, example_line

from kernelscope.errors import CompileError, TargetError, UserError

pytestmark = pytest.mark.slow

GELU_LINE = example_line("mlp", "F.gelu")


@pytest.fixture(scope="module")
def mlp_store(tmp_path_factory, run_cli_module):
    store = tmp_path_factory.mktemp("store") / ".kernelscope"
    done = run_cli_module(["compile", "examples/mlp.py:make", "--target", "virtual-cuda", "--store", str(store),
                           "--json"])
    assert done.returncode == 0, done.stderr
    return store, json.loads(done.stdout)


@pytest.fixture(scope="module")
def run_cli_module():
    import os
    import subprocess
    import sys

    def run(args, cwd=REPO):
        env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
        return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)

    return run


def test_compile_summary_json(mlp_store):
    _, summary = mlp_store
    assert summary["run"] == 1 and summary["device"] == "virtual-cuda" and summary["provenance"] == "line"
    assert [g["kind"] for g in summary["graphs"]] == ["inference"]
    assert summary["coverage"]["kernel_agreement"]["share"] == 1.0
    assert summary["coverage"]["kernel_lines"]["share"] == 1.0
    assert set(summary["timings"]) >= {"import", "capture", "lower", "codegen", "store", "total"}


def test_query_down_from_the_gelu_line_then_up_from_its_erf_line(mlp_store, run_cli_module):
    store, _ = mlp_store
    down = run_cli_module(["query", f"examples/mlp.py:{GELU_LINE}", "--store", str(store), "--json"])
    assert down.returncode == 0, down.stderr
    (chain,) = json.loads(down.stdout)["graphs"]
    erf_lines = [line for kernel in chain["kernels"] for line in kernel["lines"] if "libdevice.erf(" in line["text"]]
    assert len(erf_lines) == 1
    erf = erf_lines[0]
    assert (store / erf["file"]).read_text().splitlines()[erf["line"] - 1] == erf["text"]

    up = run_cli_module(["query", f"{store / erf['file']}:{erf['line']}", "--store", str(store),
                         "--direction", "up", "--json"])
    assert up.returncode == 0, up.stderr
    sources = {(s["file"], s["line"]) for g in json.loads(up.stdout)["graphs"] for s in g["sources"]}
    assert sources == {("examples/mlp.py", GELU_LINE)}


def test_a_failing_compile_keeps_the_store_as_it_was(mlp_store, run_cli_module, tmp_path):
    store, _ = mlp_store
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n\ndef make():\n    raise ValueError('no weights here')\n")
    before = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if "-wal" not in p.name
                    and "-shm" not in p.name)
    done = run_cli_module(["compile", f"{broken}:make", "--store", str(store)])
    assert done.returncode == TargetError.exit_code
    assert f"{broken}:4: the factory 'make' raised ValueError: no weights here" in done.stderr
    runs = run_cli_module(["runs", "--store", str(store), "--json"])
    assert [run["id"] for run in json.loads(runs.stdout)] == [1]
    after = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if "-wal" not in p.name
                   and "-shm" not in p.name)
    assert after == before


@pytest.mark.parametrize("write, factory, message", [
    (None, "make", "no such file"),
    ("import torch\n\ndef build():\n    return None\n", "make",
     "has no factory function 'make' (callables there: build)"),
    ("import torch\n\ndef make(:\n    pass\n", "make", ":3: syntax error"),
    ("import torch\n\ndef make():\n    return torch.nn.Linear(2, 2)\n", "make",
     "'make()' must return (model_or_callable, example_inputs), got Linear"),
])
def test_target_errors_are_one_line_with_file_and_line(run_cli_module, tmp_path, write, factory, message):
    target = tmp_path / "model.py"
    if write is not None:
        target.write_text(write)
    done = run_cli_module(["compile", f"{target}:{factory}", "--store", str(tmp_path / "store")])
    assert done.returncode == TargetError.exit_code
    lines = [line for line in done.stderr.splitlines() if line.startswith("kernelscope: error:")]
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert str(target) in lines[0]
    assert not (tmp_path / "store").exists()


def test_a_model_raising_in_forward_names_its_line(tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    target = tmp_path / "model.py"
    target.write_text(
        "import torch\n\n"
        "def forward(x):\n"
        "    y = x.sin()\n"
        "    return y.view(7, 7)\n\n"
        "def make():\n"
        "    return forward, (torch.randn(4, 4),)\n"
    )
    with pytest.raises(TargetError) as raised:
        record_factory(f"{target}:make", RecordOptions(workspace=tmp_path))
    assert str(raised.value).startswith(f"{target}:5: the model raised ")


def test_inductor_failing_names_the_node_and_the_user_line(tmp_path):
    import torch
    from torch._inductor import lowering

    from kernelscope.engine.recorder import RecordOptions, record_factory

    def broken_lowering(*args, **kwargs):
        raise RuntimeError("no lowering for erf today")

    with mock.patch.dict(lowering.lowerings, {torch.ops.aten.erf.default: broken_lowering}):
        with pytest.raises(CompileError) as raised:
            record_factory(f"{EXAMPLES / 'mlp.py'}:make", RecordOptions(workspace=REPO))
    message = str(raised.value)
    assert message.startswith(f"{EXAMPLES / 'mlp.py'}:{GELU_LINE}: Inductor failed while lowering node erf "
                              "(aten.erf.default): RuntimeError: no lowering for erf today")


def test_torch_older_than_2_11_is_refused_with_what_to_do(monkeypatch):
    import torch

    from kernelscope.engine.record_options import RecordOptions
    from kernelscope.engine.recording import import_torch

    monkeypatch.setattr(torch, "__version__", "2.10.1+cpu")
    with pytest.raises(UserError, match=r"torch 2.10.1\+cpu is too old: kernelscope needs torch 2.11 or newer"):
        import_torch(RecordOptions())


def test_probes_switch_off_on_a_changed_torch_and_fall_back_to_kernel_level(monkeypatch):
    from torch._inductor.codegen.triton import TritonScheduling

    from kernelscope.engine.recorder import RecordOptions, record_factory

    original = TritonScheduling.define_kernel

    def define_kernel(self, source_code, node_schedule, kernel):  # a renamed parameter
        return original(self, source_code, node_schedule, kernel)

    monkeypatch.setattr(TritonScheduling, "define_kernel", define_kernel)
    run = record_factory(f"{EXAMPLES / 'mlp.py'}:make", RecordOptions(workspace=REPO))
    assert run.provenance == "kernel"
    assert len(run.warnings) == 1
    assert "kernel-level only" in run.warnings[0] and "TritonScheduling.define_kernel" in run.warnings[0]
    (graph,) = run.graphs
    triton = [kernel for kernel in graph.kernels if kernel.kind == "triton"]
    assert len(triton) == 2
    for kernel in triton:
        assert kernel.nodes and set(kernel.nodes) == set(kernel.inductor_nodes)
        assert all(set(row.nodes) == set(kernel.nodes) for row in kernel.lines)
        assert kernel.wrapper_lines


def test_cpu_triton_execute_matches_eager(run_cli_module, tmp_path):
    done = run_cli_module(["compile", "examples/function.py:make", "--target", "cpu-triton", "--execute",
                           "--store", str(tmp_path / "store"), "--json"])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["device"] == "cpu-triton"
    assert summary["execute_max_error"] is not None and summary["execute_max_error"] < 1e-4
    assert sum(g["kernels"] for g in summary["graphs"]) == 1


def test_run_records_an_unmodified_script_with_its_recompile(run_cli_module, tmp_path):
    store = tmp_path / "store"
    done = run_cli_module(["run", "examples/train_script.py", "--store", str(store), "--json", "--", "--steps", "2"])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # with --json the script's own prints go to stderr
    assert "final loss" in done.stderr
    assert summary["mode"] == "train"
    assert [(g["compile_id"], g["kind"]) for g in summary["graphs"]] == [
        ("0/0", "forward"), ("0/0", "backward"), ("0/1", "forward"), ("0/1", "backward")]
    (recompile,) = summary["recompiles"]
    assert recompile["compile_id"] == "0/1" and "size mismatch at index 0. expected 8, actual 4" in recompile["reason"]
    tanh_line = example_line("train_script", "torch.tanh")
    query = run_cli_module(["query", f"examples/train_script.py:{tanh_line}", "--store", str(store), "--json"])
    kinds = {(g["graph"]["compile_id"], g["graph"]["kind"]) for g in json.loads(query.stdout)["graphs"]
             if g["kernels"]}
    assert kinds == {("0/0", "forward"), ("0/0", "backward"), ("0/1", "forward"), ("0/1", "backward")}
