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


def test_ops_kept_apart_by_an_extern_call_a_realized_buffer_and_a_graph_break_answer_with_their_cause(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("distributed"))
    model = tmp_path / "examples" / "kept_apart.py"
    recorded = kernelscope("compile", "examples/kept_apart.py:make", "--target", "cpu-triton", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    linear, mixed = _line_of(model, "h = torch.relu(self.fc(x))"), _line_of(model, "mixed = h * a")
    reductions, softmax = _line_of(model, "rows, cols ="), _line_of(model, "return torch.softmax")

    def not_fused(line: int) -> list[dict]:
        answer = kernelscope("query", f"examples/kept_apart.py:{line}", "--json", cwd=tmp_path)
        return json.loads(answer.stdout)["not_fused"]

    [extern] = [r for r in not_fused(linear) if r["cause"] == "extern"]  # addmm and relu: the same line
    assert extern["kernel"] == "extern_kernels.addmm#0" and extern["other_kernel"].startswith("triton_")
    assert extern["other_line"] == linear and "extern call" in extern["reason"]
    [realized] = [r for r in not_fused(mixed) if r["cause"] == "realized buffer"]
    assert realized["other_line"] == reductions and realized["kernel"] != realized["other_kernel"]
    assert "reads 5 buffers (over config.realize_reads_threshold=4)" in realized["reason"]
    [broken] = [r for r in not_fused(reductions) if r["cause"] == "graph break"]
    assert broken["other_line"] == softmax and broken["other_graph"] == "1_0_0-inference"
    assert broken["reason"].startswith(f"graph break at line {softmax - 1}: ")
    [back] = [r for r in not_fused(softmax) if r["cause"] == "graph break"]  # the second side answers too
    assert back["other_line"] == reductions and back["graph"] == "1_0_0-inference"
    shown = kernelscope("show", "1", cwd=tmp_path).stdout
    assert "why not fused" in shown and "graph break: graph break at line" in shown
    dumped = kernelscope("dump", "--run", "1", cwd=tmp_path)
    (tmp_path / "dump.json").write_text(dumped.stdout)
    assert kernelscope("validate", str(tmp_path / "dump.json"), cwd=tmp_path).returncode == 0
    causes = {r["cause"] for graph in json.loads(dumped.stdout)["run"]["graphs"] for r in graph["not_fused"]}
    assert causes == {"scheduler", "extern", "realized buffer", "graph break"}


def test_a_template_whose_epilogue_was_refused_answers_with_the_template_cause(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class LinearSoftmax(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(256, 256)\n\n"
        "    def forward(self, x):\n        h = self.fc(x)\n        return torch.softmax(h, dim=1)\n\n\n"
        "def make():\n    torch._inductor.config.max_autotune = True\n"
        "    torch._inductor.config.max_autotune_gemm_backends = 'TRITON'\n"
        "    return LinearSoftmax(), (torch.randn(256, 256),)\n")
    recorded = kernelscope("compile", "model.py:make", "--target", "virtual-cuda", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    data = json.loads(kernelscope("query", "model.py:11", "--json", cwd=tmp_path).stdout)  # h = self.fc(x)
    [refusal] = [r for r in data["not_fused"] if r["cause"] == "template" and r["reason"].startswith("template epi")]
    assert refusal["kernel"].startswith("triton_tem_") and refusal["other_line"] == 12  # the softmax
    assert refusal["reason"] == (
        "template epilogue not satisfied (the epilogue is a reduction: a template's epilogue takes pointwise ops only)")
