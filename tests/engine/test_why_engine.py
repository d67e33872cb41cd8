"""Why it recompiled, why it was not fused, recorded from real compiles (docs/why.md): the
examples recorded as a user does, asked at their lines."""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import REPO
from program_runs import kernelscope

pytestmark = pytest.mark.slow


def _line_of(path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(text))


def test_the_shape_test_line_answers_with_its_guards_and_the_recompile_it_caused(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("distributed"))
    script = tmp_path / "examples" / "recompile_shape.py"
    recorded = kernelscope("run", "examples/recompile_shape.py", "--target", "cpu-triton", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    branch = _line_of(script, "if n > 4:")
    answer = kernelscope("query", f"examples/recompile_shape.py:{branch}", "--json", cwd=tmp_path)
    data = json.loads(answer.stdout)
    shape = [(g["compile_id"], g["expression"], g["added_by"]) for g in data["guards"] if g["kind"] == "shape"]
    assert shape == [("0/1", "x.size()[0] <= 4", "user code"), ("0/2", "x.size()[0] > 4", "user code")]
    [recompile] = data["recompiles"]
    assert (recompile["compile_id"], recompile["failed_compile_id"], recompile["guard"]) == (
        "0/2", "0/1", "2 <= x.size()[0] <= 4")
    assert recompile["values"] == {"x.size()[0]": "8"}
    assert branch in [line for _, line, _ in recompile["lines"]] and "torch.cond" in recompile["advice"]
    first_use = kernelscope("query", f"examples/recompile_shape.py:{_line_of(script, 'n = x.shape[0]')}", "--json",
                            cwd=tmp_path)
    mismatches = [r for r in json.loads(first_use.stdout)["recompiles"] if "size mismatch" in r["guard"]]
    assert [(r["compile_id"], r["values"]) for r in mismatches] == [
        ("0/1", {"x.size()[0]": "3"}), ("0/2", {"x.size()[0]": "8"})]
    inductor = [g for g in json.loads(first_use.stdout)["guards"] if g["added_by"].startswith("inductor")]
    assert inductor and all(g["line_via"] == "symbol" for g in inductor)  # torch asked: placed at the symbol's line
    dumped = kernelscope("dump", "--run", "1", cwd=tmp_path)
    (tmp_path / "dump.json").write_text(dumped.stdout)
    assert kernelscope("validate", str(tmp_path / "dump.json"), cwd=tmp_path).returncode == 0
    assert "<id>" in dumped.stdout and "140" not in json.dumps(  # no object id from this process
        [g["expression"] for g in json.loads(dumped.stdout)["run"]["guards"] if g["kind"] == "ID_MATCH"])


def test_a_line_whose_op_was_not_fused_answers_with_the_schedulers_reason(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("distributed"))
    model = tmp_path / "examples" / "not_fused.py"
    recorded = kernelscope("compile", "examples/not_fused.py:make", "--target", "cpu-triton", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    col, softmax = _line_of(model, "col = x.sum(dim=0)"), _line_of(model, "probs = torch.softmax(x, dim=1)")
    data = json.loads(kernelscope("query", f"examples/not_fused.py:{col}", "--json", cwd=tmp_path).stdout)
    refusals = [(r["node"], r["other_line"], r["reason"]) for r in data["not_fused"]]
    assert ("sum_1", softmax, "no shared data") in refusals
    [refusal] = [r for r in data["not_fused"] if r["other_line"] == softmax]
    assert refusal["kernel"] != refusal["other_kernel"] and refusal["kernel"].startswith("triton_")
