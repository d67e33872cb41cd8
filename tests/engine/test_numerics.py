"""`kernelscope numerics` on the planted examples (docs/numerics.md): each names the line where
compiled and eager part ways (not its neighbours), stores what it found with the run, and
says which fix removes the divergence. Each command runs in a fresh process, as a user runs
it (cpu-triton's interpreter is chosen before torch's Triton helpers load)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO
from program_runs import kernelscope

from kernelscope.store import StoreBackend, validate_dump

pytestmark = pytest.mark.slow


def numerics(store, *args) -> dict:
    done = kernelscope("numerics", *args, "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("numerics") / ".kernelscope"


@pytest.fixture(scope="module")
def fp16(store):
    return numerics(store, "examples/numerics_fp16_overflow.py:make")


def test_fp16_overflow_names_the_product_line(fp16):
    first = fp16["first_divergence"]
    assert (first["file"], first["line"], first["node"]) == ("examples/numerics_fp16_overflow.py", 13, "mul")
    assert first["cause"] == "precision" and first["max_abs"] == "inf"
    # eager overflowed to inf, the fused kernel (float32 inside) stayed close to float64
    assert first["eager_vs_fp64"] == "inf" and first["compiled_vs_fp64"] < 0.01
    [output] = fp16["kernels"]
    assert output["over"] and output["node"] == "relu" and output["line"] == 15
    assert fp16["lines"][0] == {"file": "examples/numerics_fp16_overflow.py", "line": 15, "max_abs": "inf",
                                "max_rel": "inf", "over": True, "outputs": 1}


def test_fp16_overflow_fixes_remove_the_divergence(fp16):
    fixes = {fix["kind"]: fix for fix in fp16["fixes"]}
    assert fixes["eager_line"]["what"].endswith("numerics_fp16_overflow.py:13 left to eager")
    assert fixes["eager_line"]["gone"] and fixes["emulate_precision_casts"]["gone"]


def test_numerics_are_stored_with_the_run_and_dumped(fp16, store):
    with StoreBackend(store) as opened:
        view = opened.run(fp16["run"])
        report = view.numerics()
        assert report.first_divergence.source.line == 13
        [line] = view.line_numerics("examples/numerics_fp16_overflow.py")
        assert (line.line, line.over) == (15, True)
        dumped = view.dump()
    validate_dump(dumped)
    assert dumped["run"]["numerics"]["first_divergence"]["line"] == 13
    shown = kernelscope("show", str(fp16["run"]), "--store", str(store))
    assert "first divergence: examples/numerics_fp16_overflow.py:13 node mul" in shown.stdout
    as_json = json.loads(kernelscope("show", str(fp16["run"]), "--store", str(store), "--json").stdout)
    assert as_json["numerics"]["first_divergence"]["line"] == 13


def test_bf16_rounding_names_the_subtraction_not_the_addition(store):
    found = numerics(store, "examples/numerics_bf16_rounding.py:make")
    first = found["first_divergence"]
    assert (first["line"], first["node"], first["cause"]) == (13, "sub", "precision")
    assert first["compiled_vs_fp64"] < first["eager_vs_fp64"]
    assert all(fix["gone"] for fix in found["fixes"])  # eager for the line, or eager's roundings emulated


def test_reduction_order_names_the_sum_and_only_eager_removes_it(store):
    found = numerics(store, "examples/numerics_reduction_order.py:make")
    first = found["first_divergence"]
    assert (first["line"], first["node"], first["cause"]) == (13, "sum_1", "order")
    fixes = {fix["kind"]: fix for fix in found["fixes"]}
    assert fixes["eager_line"]["gone"]
    assert not fixes["emulate_precision_casts"]["gone"]  # no rounding to emulate: the order differs


def test_extern_mm_output_is_compared_and_its_line_named(store):
    found = numerics(store, "examples/numerics_mm_amplified.py:make")
    first = found["first_divergence"]
    assert (first["line"], first["node"], first["cause"]) == (15, "mm", "extern")
    assert first["kernel"].startswith("extern_kernels.mm")
    assert "its input add (line 14) already differs from eager" in first["why"]
    scaled, product = found["kernels"]  # the fused kernel, then the extern mm, in launch order
    assert (scaled["node"], scaled["over"], scaled["max_abs"] > 0) == ("add", False, True)  # within tolerance
    assert (product["kernel"], product["arg"], product["over"]) == (first["kernel"], "out", True)
    fixes = {fix["kind"]: fix for fix in found["fixes"]}
    assert fixes["emulate_precision_casts"]["gone"]  # eager's two roundings emulated: the mm's input agrees
    assert not fixes["eager_line"]["gone"]  # the mm already runs eager's op: its input still differs


def test_extern_fallback_and_multi_output_nodes_are_compared(store):
    found = numerics(store, "tests/data/numerics_multi_output.py:make", "--no-fixes")
    assert found["first_divergence"] is None
    assert all(output["max_abs"] is not None and not output["note"] for output in found["kernels"]), found["kernels"]
    by_node = {output["node"]: output for output in found["kernels"]}
    assert {"mm", "addmm", "bmm"} <= set(by_node)
    assert by_node["mm"]["line"] == 9 and by_node["bmm"]["line"] == 11
    var_mean = [output for output in found["kernels"] if output["kernel"].startswith("triton_per_fused_var_mean")]
    assert len({output["node"] for output in var_mean}) == 2  # each buffer its own output of var_mean
    topk = [output for output in found["kernels"] if output["kernel"].startswith("torch.ops.aten.topk")]
    assert [(output["arg"], output["dtype"]) for output in topk] == [("out[0]", "float32"), ("out[1]", "int64")]
    assert all(output["line"] == 13 for output in topk)


def test_train_compares_forward_and_backward(store):
    found = numerics(store, "examples/numerics_fp16_overflow.py:make", "--train", "--no-fixes")
    graphs = {output["graph"] for output in found["kernels"]}
    assert any(key.endswith("forward") for key in graphs) and any(key.endswith("backward") for key in graphs)
    assert found["first_divergence"]["line"] == 13 and found["first_divergence"]["graph"].endswith("forward")
    assert found["fixes"] == []


def test_agreeing_model_has_no_divergence(store):
    found = numerics(store, "examples/function.py:make", "--no-fixes")
    assert found["first_divergence"] is None
    assert found["kernels"] and not any(output["over"] for output in found["kernels"])


def test_run_script_with_numerics(tmp_path):
    script = tmp_path / "overflow_script.py"
    script.write_text("import sys\nimport torch\n"
                      f"sys.path.insert(0, {str(REPO / 'examples')!r})\n"
                      "from numerics_fp16_overflow import make\n"
                      "fn, inputs = make()\nprint(torch.compile(fn)(*inputs).shape)\n")
    done = kernelscope("run", str(script), "--numerics", "--target", "cpu-triton", "--no-fixes", "--json",
                       "--store", str(tmp_path / ".kernelscope"))
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)["numerics"]
    assert found["first_divergence"]["line"] == 13 and found["first_divergence"]["node"] == "mul"


def test_eager_line_compile_and_the_numerics_diff_gate(fp16, store, tmp_path):
    fixed = numerics(store, "examples/numerics_fp16_overflow.py:make", "--no-fixes",
                     "--eager-line", "examples/numerics_fp16_overflow.py:13")
    assert fixed["first_divergence"] is None and not any(output["over"] for output in fixed["kernels"])
    gate = kernelscope("diff", str(fixed["run"]), str(fp16["run"]), "--store", str(store), "--fail-on", "numerics")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "examples/numerics_fp16_overflow.py:15 is beyond tolerance against eager" in gate.stdout
    back = kernelscope("diff", str(fp16["run"]), str(fixed["run"]), "--store", str(store), "--fail-on", "numerics")
    assert back.returncode == 0, back.stdout + back.stderr  # the divergence gone: the gate passes


def test_python_api_records_numerics(tmp_path):
    script = ("import os\nos.environ['TRITON_INTERPRET'] = '1'\nimport sys\n"
              f"sys.path.insert(0, {str(REPO / 'examples')!r})\n"
              "import kernelscope\nfrom numerics_fp16_overflow import make\nfn, inputs = make()\n"
              f"run = kernelscope.record(fn, *inputs, target='cpu-triton', numerics=True, store={str(tmp_path)!r})\n"
              "first = run.numerics.first_divergence\n"
              "print('FOUND', first.source.line, first.node, [fix.gone for fix in run.numerics.fixes])\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FOUND 13 mul [True, True]" in done.stdout
