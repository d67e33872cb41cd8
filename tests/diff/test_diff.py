"""`kernelscope diff`: kernels paired by what they compute, per-line changes, gates and exit codes.

The slow tests diff real recordings of examples/mlp.py and of edited copies of it
(GELU -> ReLU; a `print` that breaks the graph), recorded once per module. The
fast ones diff hand-edited dumps of the synthetic MLP run.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPO, example_line
from synthetic_runs import GELU_LINE, mlp_store, workspace  # noqa: F401  (fixtures)

import kernelscope.cli
from kernelscope.diff import compare_runs, diff_side, evaluate_gates, parse_gates
from kernelscope.diff.gates import exit_code
from kernelscope.errors import UserError
from kernelscope.store import StoreBackend, dump_json

MLP = "examples/mlp.py"
GELU_FUSED = "triton_per_fused_addmm_gelu_native_layer_norm_0"
RELU_FUSED = "triton_per_fused_addmm_native_layer_norm_relu_0"
GELU = example_line("mlp", "F.gelu(h)")
NORM = example_line("mlp", "self.norm(h)")
PRINT_REASON = "Dynamo does not know how to trace builtin operator `print`"


@pytest.fixture
def cli(capsys):
    def run(*argv: str) -> tuple[int, str, str]:
        code = kernelscope.cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def diff_of(before: dict, after: dict, gates: str = ""):
    diff = compare_runs(diff_side(before, "before"), diff_side(after, "after"))
    results = evaluate_gates(diff, parse_gates([gates]))
    return diff, results, exit_code(results)


# -- fast: hand-edited dumps of the synthetic run ------------------------------------------------


def test_identical_dumps_give_an_empty_diff(mlp_store):
    data = mlp_store.dump(1)
    diff, results, code = diff_of(data, copy.deepcopy(data), "all")
    assert diff.is_empty and code == 0
    assert diff.unchanged_kernels == 5  # forward: 2 addmm + gelu; backward: mm + gelu backward
    assert [result.gate for result in results if result.tripped] == []


def test_renumbered_kernel_is_the_same_kernel(mlp_store):
    """Inductor numbers kernels by position: `_0` -> `_7` alone is no change."""
    before = mlp_store.dump(1)
    after = copy.deepcopy(before)
    for graph in after["run"]["graphs"]:
        for kernel in graph["kernels"]:
            kernel["name"] = kernel["name"].replace("fused_gelu_0", "fused_gelu_7")
    assert "triton_poi_fused_gelu_7" in json.dumps(after)
    diff, _, code = diff_of(before, after, "kernel-change")
    assert diff.is_empty and code == 0


def test_vanished_kernel_is_reported_at_its_source_lines(mlp_store):
    before = mlp_store.dump(1)
    after = copy.deepcopy(before)
    forward = after["run"]["graphs"][1]
    forward["kernels"] = [k for k in forward["kernels"] if k["name"] != "triton_poi_fused_gelu_0"]
    diff, results, code = diff_of(before, after, "kernel-count,kernel-change")
    assert [(c.status, c.before, c.after) for c in diff.kernels] == [("vanished", "triton_poi_fused_gelu_0", None)]
    assert diff.totals["kernels"].before == 2 and diff.totals["kernels"].after == 1
    assert [(r.gate, r.tripped) for r in results] == [("kernel-count", False), ("kernel-change", True)]
    assert code == 1
    gelu_rows = [line for line in diff.source_lines if line.vanished]
    assert [(line.where, line.vanished) for line in gelu_rows] == [
        (f"{MLP}:{GELU_LINE}", ["triton_poi_fused_gelu_0"])]


def test_new_fallback_trips_the_fallback_gate(mlp_store):
    """An extern call into torch.ops.aten is an op Inductor could not lower; extern_kernels.* are not."""
    before = mlp_store.dump(1)
    after = copy.deepcopy(before)
    forward = after["run"]["graphs"][1]
    extern = next(k for k in forward["kernels"] if k["name"].startswith("extern_kernels.addmm"))
    forward["kernels"].append({**copy.deepcopy(extern), "name": "torch.ops.aten.median.default#0"})
    diff, results, code = diff_of(before, after, "fallback,kernel-count")
    assert [(f.op, f.before, f.after) for f in diff.fallbacks] == [("torch.ops.aten.median.default", 0, 1)]
    assert diff.totals["fallbacks"].delta == 1 and diff.totals["extern_calls"].delta == 1
    assert [(r.gate, r.tripped) for r in results] == [("kernel-count", False), ("fallback", True)]
    assert code == 1
    diff, results, code = diff_of(after, before, "fallback")  # fewer fallbacks is no regression
    assert [(f.op, f.before, f.after) for f in diff.fallbacks] == [("torch.ops.aten.median.default", 1, 0)]
    assert code == 0


def test_gate_names_are_checked():
    assert parse_gates(["graph-break,kernel-count", "fallback"]) == ["kernel-count", "graph-break", "fallback"]
    assert len(parse_gates(["all"])) == 14
    with pytest.raises(UserError, match="unknown gate 'kernel-counts' in --fail-on; gates: kernel-count, "):
        parse_gates(["kernel-counts"])


def test_cli_errors_and_exit_codes(mlp_store, workspace, cli):
    assert cli("dump", "-o", "a.json")[0] == 0
    code, _, err = cli("diff", "a.json", "missing.json")
    assert code == 2 and "missing.json: no such file, and not a run of the store" in err
    code, _, err = cli("diff", "a.json", "latest~1")
    assert code == 5 and "latest~1: the store" in err and "has only 1 run" in err
    code, _, err = cli("diff", "a.json", "1", "--fail-on", "speed")
    assert code == 2 and "unknown gate 'speed'" in err
    Path("summary.json").write_text(json.dumps({"run": 1, "graphs": []}))
    code, _, err = cli("diff", "a.json", "summary.json")
    assert code == 2 and "summary.json: not a kernelscope dump this version reads (schema_version None" in err
    assert "kernelscope compile --dump FILE" in err
    broken = json.loads(Path("a.json").read_text())
    del broken["run"]["graphs"][0]["kernels"]
    Path("broken.json").write_text(json.dumps(broken))
    code, _, err = cli("diff", "broken.json", "a.json")
    assert code == 2
    assert err == ("kernelscope: error: broken.json: invalid dump at $.run.graphs[0]: 'kernels' is a required property "
                   "(--traceback shows the full error)\n")
    code, out, _ = cli("diff", "a.json", "latest", "--fail-on", "all", "--format", "json", "-o", "d.json")
    assert (code, out) == (0, "")
    report = json.loads(Path("d.json").read_text())
    assert report["empty"] is True and report["exit_code"] == 0 and len(report["gates"]) == 14


def test_diff_help_lists_gates_exit_codes_and_examples(cli, capsys):
    with pytest.raises(SystemExit):
        kernelscope.cli.main(["diff", "--help"])
    out = capsys.readouterr().out
    assert "kernel-count" in out and "graph-break" in out and "fallback" in out
    assert "1  a gate named by --fail-on tripped" in out
    assert out.rstrip().splitlines()[-1].strip().startswith("kernelscope diff")


def test_diff_never_imports_torch():
    code = ("import sys, kernelscope.cli.diff_cmd, kernelscope.diff.report; "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.stdout.strip() == "False", result.stderr


# -- slow: real recordings of examples/mlp.py and edited copies ----------------------------------


def _edited_copy(root: Path, edit) -> Path:
    """examples/mlp.py copied to root/examples/mlp.py (the same workspace-relative path), edited."""
    target = root / MLP
    target.parent.mkdir(parents=True)
    target.write_text(edit((EXAMPLES / "mlp.py").read_text()))
    return target


@pytest.fixture(scope="module")
def real_runs(recordings, tmp_path_factory):
    """A store with run 1 = examples/mlp.py, 2 = an unchanged copy recorded through
    `kernelscope compile --dump`, 3 = the copy with GELU -> ReLU, 4 = the copy with a
    `print` after the GELU line. Returns (store dir, {name: dump})."""
    from kernelscope.engine.recorder import RecordOptions, record_factory

    root = tmp_path_factory.mktemp("diff")
    store_dir = root / ".kernelscope"
    with StoreBackend(store_dir) as store:
        assert store.write_run(recordings.get("mlp")) == 1

    same = root / "same"
    _edited_copy(same, lambda text: text)
    cwd = Path.cwd()
    os.chdir(same)
    try:
        code = kernelscope.cli.main(["compile", f"{MLP}:make", "--store", str(store_dir),
                                     "--dump", str(root / "same.json")])
    finally:
        os.chdir(cwd)
    assert code == 0

    relu = _edited_copy(root / "relu", lambda text: text.replace("h = F.gelu(h)", "h = F.relu(h)"))
    brk = _edited_copy(root / "brk", lambda text: text.replace(
        "        h = F.gelu(h)\n", "        h = F.gelu(h)\n        print('kernelscope test: graph break')\n"))
    with StoreBackend(store_dir) as store:
        for path in (relu, brk):
            options = RecordOptions(device="virtual-cuda", workspace=path.parent.parent)
            store.write_run(record_factory(f"{path}:make", options))
        dumps = {name: store.dump(run_id) for name, run_id in (("base", 1), ("same", 2), ("relu", 3), ("brk", 4))}
    return store_dir, dumps


@pytest.mark.slow
def test_compile_dump_writes_the_deterministic_dump(real_runs):
    store_dir, dumps = real_runs
    written = (store_dir.parent / "same.json").read_text()
    assert written == dump_json(dumps["same"])
    assert json.loads(written)["run"]["target"] == dumps["base"]["run"]["target"] == f"{MLP}:make"


@pytest.mark.slow
def test_identical_real_runs_give_an_empty_diff(real_runs, cli):
    store_dir, _ = real_runs
    code, out, _ = cli("diff", "1", str(store_dir.parent / "same.json"), "--store", str(store_dir), "--fail-on", "all")
    assert code == 0
    assert out.splitlines()[1] == "no differences (4 kernel(s) unchanged)"
    assert "TRIPPED" not in out and out.count(": ok") == len(parse_gates(["all"]))


@pytest.mark.slow
def test_gelu_to_relu_changes_exactly_the_fused_gelu_kernel(real_runs):
    _, dumps = real_runs
    diff, results, code = diff_of(dumps["base"], dumps["relu"], "kernel-count,graph-break,fallback")
    assert code == 0  # as many kernels, no break, no fallback
    assert [(c.status, c.before, c.after) for c in diff.kernels] == [("changed", GELU_FUSED, RELU_FUSED)]
    [change] = diff.kernels
    assert change.changes == ["renamed", "ops", "size"]
    assert change.ops_removed == {"aten.add.Tensor": 1, "aten.erf.default": 1, "aten.mul.Tensor": 3}
    assert change.ops_added == {"aten.relu.default": 1}
    assert diff.unchanged_kernels == 3
    assert {name: count.delta for name, count in diff.totals.items() if count.delta} == {
        "kernel_lines": -6, "wrapper_lines": -10}
    assert diff.graphs[0].graph == "[0/0] inference" and diff.graph_breaks == [] and diff.fallbacks == []

    rows = {line.line_after: line for line in diff.source_lines}
    assert sorted(rows) == [GELU - 1, GELU, GELU + 1]  # fc1 and norm share the fused kernel
    gelu = rows[GELU]
    assert (gelu.line_before, gelu.code_before, gelu.code_after) == (GELU, "h = F.gelu(h)", "h = F.relu(h)")
    assert gelu.changed == [f"{GELU_FUSED} -> {RELU_FUSED}"]
    assert gelu.appeared == gelu.vanished == []
    assert gelu.ops_removed == {"aten.add.Tensor": 1, "aten.erf.default": 1, "aten.mul.Tensor": 3}
    assert gelu.ops_added == {"aten.relu.default": 1}
    assert (gelu.kernel_lines_before, gelu.kernel_lines_after) == (8, 2)  # the erf lines are gone
    for line in (GELU - 1, GELU + 1):
        assert rows[line].ops_removed == rows[line].ops_added == {}
        assert rows[line].changed == [f"{GELU_FUSED} -> {RELU_FUSED}"]

    diff, results, code = diff_of(dumps["base"], dumps["relu"], "kernel-change")
    assert code == 1 and results[0].reasons == [
        f"kernel changed: {GELU_FUSED} -> {RELU_FUSED} (renamed, ops, size)"]


@pytest.mark.slow
def test_inserted_print_reports_the_new_graph_break(real_runs, cli):
    store_dir, dumps = real_runs
    diff, results, code = diff_of(dumps["base"], dumps["brk"], "graph-break")
    assert code == 1
    assert [(b.status, b.file, b.line, b.compile_id) for b in diff.graph_breaks] == [
        ("new", MLP, GELU + 1, "0/0")]
    assert PRINT_REASON in diff.graph_breaks[0].reason
    assert results[0].reasons == [f"new graph break at {MLP}:{GELU + 1}: {diff.graph_breaks[0].reason}"]
    assert [(g.graph, g.status) for g in diff.graphs] == [
        ("[0/0] inference", "removed"), ("[0/0_1] inference", "added"), ("[1/0] inference", "added")]
    counts = diff.totals
    assert (counts["graphs"].before, counts["graphs"].after) == (1, 2)
    assert (counts["kernels"].before, counts["kernels"].after) == (2, 3)
    # lines below the print moved down by one and still compare with their old selves
    norm = next(line for line in diff.source_lines if line.code_after == "h = self.norm(h)")
    assert (norm.line_before, norm.line_after) == (NORM, NORM + 1)
    assert norm.appeared == ["triton_per_fused_native_layer_norm_0"]

    code, out, _ = cli("diff", "1", "4", "--store", str(store_dir), "--fail-on", "kernel-count,graph-break,fallback")
    assert code == 1
    gates = out[out.index("gates:"):].splitlines()
    assert gates[:3] == ["gates:", "  kernel-count: TRIPPED", "    generated kernels: 2 -> 3 (+1)"]
    assert gates[3] == "  graph-break: TRIPPED" and gates[-1] == "  fallback: ok"

    # back again: the break is fixed and there are fewer kernels, which trips nothing
    diff, _, code = diff_of(dumps["brk"], dumps["base"], "kernel-count,graph-break")
    assert code == 0
    assert [(b.status, b.line) for b in diff.graph_breaks] == [("fixed", GELU + 1)]


@pytest.mark.slow
def test_markdown_report_for_a_pull_request(real_runs, cli):
    store_dir, _ = real_runs
    code, out, _ = cli("diff", "1", "3", "--store", str(store_dir), "--format", "md", "--fail-on", "kernel-change")
    assert code == 1
    assert out.startswith("### kernelscope diff: `run 1` → `run 3`\n")
    assert "❌ 1 gate(s) tripped: kernel-change" in out
    assert f"| `{MLP}:{GELU}` | `h = F.gelu(h)  ->  h = F.relu(h)` | changed fusion: {GELU_FUSED} -> {RELU_FUSED}" \
           "<br>ops: -aten.add.Tensor, -aten.erf.default, -aten.mul.Tensor x3, +aten.relu.default" \
           "<br>kernel lines computing it: 8 -> 2 |" in out
