"""Whole-stack provenance on a real multi-layer model (examples/nanogpt.py: a loop
over two Blocks), inference and training: outer lines answer via call, split by
module instance; `--module` picks one layer; a kernel line lists its whole stack;
pass lineage; Dynamo's graph-break hints; dumps; TORCH_TRACE imports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, example_line

from kernelscope.errors import UserError
from kernelscope.store import StoreBackend, validate_dump
from kernelscope.trace_import import ImportOptions, find_logs, import_log

pytestmark = pytest.mark.slow

NANOGPT = "examples/nanogpt.py"
LOOP_LINE = example_line("nanogpt", "    x = block(x)")
ATTN_LINE = example_line("nanogpt", "x = x + self.attn(self.ln1(x))")
GELU_LINE = example_line("nanogpt", 'approximate="tanh"')


def _kernelscope(args, env_extra=None, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def inference(tmp_path_factory):
    """nanoGPT inference recorded by the CLI with TORCH_TRACE on: (store path, the log)."""
    root = tmp_path_factory.mktemp("nanogpt")
    done = _kernelscope(["compile", f"{NANOGPT}:make", "--store", str(root / "store")],
                        {"TORCH_TRACE": str(root / "trace")})
    assert done.returncode == 0, done.stderr
    (log,) = find_logs(root / "trace")
    return root / "store", log


@pytest.fixture(scope="module")
def train(recordings, tmp_path_factory):
    """nanoGPT training (forward and backward graphs) in a store of its own."""
    store = StoreBackend(tmp_path_factory.mktemp("nanogpt_train") / "store")
    store.write_run(recordings.get("nanogpt", train=True))
    yield store
    store.close()


def _instances(result) -> dict[str, set[str]]:
    """graph kind -> the top-level module instances (blocks.N) its answer reaches."""
    found: dict[str, set[str]] = {}
    for chain in result.graphs:
        for node in chain.post_nodes:
            if node.module.startswith("blocks."):
                found.setdefault(chain.graph.kind, set()).add(".".join(node.module.split(".")[:2]))
    return found


def test_loop_line_reaches_every_layer_via_call(inference):
    with StoreBackend(inference[0], create=False) as store:
        result = store.query(NANOGPT, LOOP_LINE)
    assert _instances(result) == {"inference": {"blocks.0", "blocks.1"}}
    (chain,) = result.graphs
    assert {node.via for node in chain.post_nodes} == {"call"}
    # Both layers became kernels: Triton ones and extern matmuls, split by instance.
    by_module = {summary.module: summary for summary in chain.modules}
    for layer in ("blocks.0", "blocks.1"):
        assert by_module[f"{layer}.attn.qkv"].extern_calls, layer
        assert by_module[f"{layer}.ln1"].triton_kernels, layer
        assert by_module[f"{layer}.attn.qkv"].module_class == "torch.nn.modules.linear.Linear"
    assert by_module["blocks.1"].module_class == "nanogpt.Block"
    # The direct-only answer is today's: no op is written on the loop line itself.
    with StoreBackend(inference[0], create=False) as store:
        assert store.query(NANOGPT, LOOP_LINE, direct_only=True).empty


def test_loop_line_forward_and_backward_in_training(train):
    result = train.query(NANOGPT, LOOP_LINE)
    assert _instances(result) == {"forward": {"blocks.0", "blocks.1"}, "backward": {"blocks.0", "blocks.1"}}
    backward = next(chain for chain in result.graphs if chain.graph.kind == "backward")
    assert any(kernel.kind == "triton" for kernel in backward.kernels)
    assert any(kernel.kind == "extern" for kernel in backward.kernels)


def test_summary_counts_agree_with_the_detail(train):
    """Without detail the store counts lines instead of listing them: same modules,
    kernels and line counts, rolled up per block."""
    detail = train.query(NANOGPT, LOOP_LINE, rollup=True)
    summary = train.query(NANOGPT, LOOP_LINE, detail=False, rollup=True)
    assert [chain.graph.kind for chain in summary.graphs] == ["forward", "backward"]
    for full, counted in zip(detail.graphs, summary.graphs):
        assert [(m.module, m.generated_lines, m.triton_kernels, m.extern_calls) for m in counted.modules] == \
               [(m.module, m.generated_lines, m.triton_kernels, m.extern_calls) for m in full.modules]
        assert counted.generated_lines == full.generated_lines > 0
        assert {"blocks.0", "blocks.1"} <= {m.module for m in counted.modules}
        assert not counted.wrapper_lines and not any(kernel.lines or kernel.calls for kernel in counted.kernels)


def test_source_index_agrees_with_the_query_on_every_line(train):
    """The source index (what the editor and the TUI read on every cursor move) lists,
    per graph, the same post-grad lines, kernels, kernel lines and wrapper lines as
    StoreBackend.query's full answer, for every line of the model file, outer lines included."""
    index = train.source_file_index(NANOGPT)
    assert LOOP_LINE in index.answers and GELU_LINE in index.answers
    for line, answer in index.answers.items():
        full = {chain.graph.key: chain for chain in train.query(NANOGPT, line, direction="down").graphs}
        hits = {hit.graph.key: hit for hit in answer.graphs}
        assert set(hits) == set(full), line
        for key, hit in hits.items():
            chain = full[key]
            assert hit.post_lines == sorted({node.graph_line for node in chain.post_nodes}), (line, key)
            assert sorted(hit.post_names) == sorted(node.name for node in chain.post_nodes), (line, key)
            kernels = {kernel.name: kernel for kernel in chain.kernels}
            assert [k.kernel.name for k in hit.kernels] == [kernel.name for kernel in chain.kernels], (line, key)
            for kernel_hit in hit.kernels:
                kernel = kernels[kernel_hit.kernel.name]
                assert kernel_hit.lines == sorted({ref.line for ref in kernel.lines}), (line, kernel.name)
                assert kernel_hit.calls == [call.line for call in kernel.calls], (line, kernel.name)
            assert hit.wrapper_lines == sorted({ref.line for ref in chain.wrapper_lines}), (line, key)
    assert train.source_line(NANOGPT, LOOP_LINE).graphs == index.answers[LOOP_LINE].graphs
    assert train.source_line(NANOGPT, 1).empty  # a line nothing was recorded for
    with pytest.raises(UserError, match="not a model source file"):
        train.source_file_index(train.query(NANOGPT, GELU_LINE).graphs[0].kernels[0].file)


def test_kernel_facts_agree_with_the_dump(train):
    """StoreBackend.kernel_facts (what the TUI's kernel list reads) gives each kernel the model
    lines, wrapper lines and module instances the run's dump gives it."""
    facts = train.kernel_facts()
    dump = train.dump()
    expected = {}
    for graph in dump["run"]["graphs"]:
        nodes = {node["name"]: node for node in graph["post_grad_nodes"]}
        for kernel in graph["kernels"]:
            mine = [nodes[name] for name in kernel["nodes"] if name in nodes]
            expected[f"{graph['key']}/{kernel['name']}"] = (
                sorted({(node["source"]["file"], node["source"]["line"]) for node in mine if node.get("source")}),
                sorted(kernel["wrapper_lines"]),
                sorted({node["module_path"] for node in mine if node.get("module_path")}))
    assert {key: (fact.source_lines, fact.wrapper_lines, fact.modules) for key, fact in facts.items()} == expected
    assert any(fact.modules and fact.source_lines and fact.wrapper_lines for fact in facts.values())


def test_module_option_selects_one_layer(train):
    result = train.query(NANOGPT, LOOP_LINE, module="blocks.1")
    assert _instances(result) == {"forward": {"blocks.1"}, "backward": {"blocks.1"}}
    assert all(node.module == "blocks.1" or node.module.startswith("blocks.1.")
               for chain in result.graphs for node in chain.pre_nodes + chain.post_nodes)
    assert result.graphs and all(chain.kernels for chain in result.graphs)
    # A prefix of the dotted path, not of the text: `blocks.1` would not match `blocks.10`.
    assert train.query(NANOGPT, LOOP_LINE, module="blocks.").graphs
    assert train.query(NANOGPT, LOOP_LINE, module="blocks.9").empty


def test_outer_line_reaches_the_calls_beneath_it(train):
    """`x = x + self.attn(self.ln1(x))`: the LayerNorm and residual add are direct, the
    attention call and its projections are reached via call."""
    result = train.query(NANOGPT, ATTN_LINE)
    forward = next(chain for chain in result.graphs if chain.graph.kind == "forward")
    via_of = {}
    for node in forward.post_nodes:
        via_of.setdefault(node.module, set()).add(node.via)
    assert "direct" in via_of["blocks.0.ln1"]
    assert via_of["blocks.0.attn.qkv"] == {"call"} and via_of["blocks.0.attn.proj"] == {"call"}
    assert any("scaled_dot_product" in kernel.name for kernel in forward.kernels)


def test_kernel_line_queried_up_lists_the_whole_stack(train):
    forward = next(chain for chain in train.query(NANOGPT, GELU_LINE, module="blocks.1").graphs
                   if chain.graph.kind == "forward")
    tanh_line = next(line for kernel in forward.kernels for line in kernel.lines if "tanh" in line.text)
    up = train.query(tanh_line.file, tanh_line.line, direction="up")
    stacks = {tuple((frame.file, frame.line) for frame in node.stack)
              for chain in up.graphs for node in chain.post_nodes}
    assert ((NANOGPT, LOOP_LINE), (NANOGPT, example_line("nanogpt", "x = x + self.mlp(self.ln2(x))")),
            (NANOGPT, GELU_LINE)) in stacks
    modules = {node.module for chain in up.graphs for node in chain.post_nodes}
    assert "blocks.1.mlp" in modules


def test_pass_lineage_names_the_pass_and_the_node(train):
    """Inductor unfuses a Linear's bias add from `addmm` (replace_by_example) and
    rewrites matmuls of views (pattern_matcher): the nodes it made say so."""
    lineages = [step for chain in train.query(NANOGPT, LOOP_LINE).graphs
                for node in chain.post_nodes for step in node.lineage]
    assert any(step.startswith("replace_by_example (replaced) from addmm") for step in lineages), lineages[:20]
    assert any(step.startswith("pattern_matcher") for step in lineages)


def test_cli_summary_detail_and_json(inference, tmp_path):
    store = str(inference[0])
    summary = _kernelscope(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store])
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert any(line.strip().startswith("blocks.0 (Block)  call:") for line in lines), summary.stdout
    assert any(line.strip().startswith("blocks.1 (Block)  call:") for line in lines)
    assert len(lines) < 40, summary.stdout
    detail = _kernelscope(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store, "--detail", "--module", "blocks.1"])
    assert detail.returncode == 0
    assert "in blocks.1.attn.qkv" in detail.stdout and "in blocks.0" not in detail.stdout
    as_json = json.loads(_kernelscope(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store, "--json"]).stdout)
    node = as_json["graphs"][0]["post_nodes"][0]
    assert node["via"] == "call" and node["stack"][0]["line"] == LOOP_LINE and node["module"]


def test_dumps_are_deterministic_and_schema_valid(inference, recordings, tmp_path):
    with StoreBackend(inference[0], create=False) as store:
        first = store.dump()
    validate_dump(first)
    fx_node = next(node for graph in first["run"]["graphs"] for node in graph["post_grad_nodes"]
                   if node["module_path"] == "blocks.1.attn.qkv")
    assert [frame["line"] for frame in fx_node["stack"]][0] == LOOP_LINE
    # A second recording, in this process and another store, dumps byte-identically.
    with StoreBackend(tmp_path / "again") as again:
        again.write_run(recordings.get("nanogpt"))
        assert json.dumps(again.dump(), sort_keys=True) == json.dumps(first, sort_keys=True)


def test_imported_trace_log_has_the_whole_stack(inference, tmp_path):
    _, log = inference
    result = import_log(log, ImportOptions(workspace=REPO))
    with StoreBackend(tmp_path / "imported") as store:
        store.write_run(result.runs[0].run)
        answer = store.query(NANOGPT, LOOP_LINE)
        assert {chain.graph.kind for chain in answer.graphs} == {"inference"}
        assert answer.graphs[0].kernels and all(node.via == "call" for node in answer.graphs[0].post_nodes)


def test_graph_break_keeps_dynamo_explanation_and_hint(tmp_path):
    script = tmp_path / "train_step.py"
    script.write_text(
        "import torch\n\n\ndef step(x):\n    loss = (x * 2).sum()\n    if loss.item() > 100:\n"
        "        return loss + 1\n    return loss - 1\n\n\nprint(torch.compile(step)(torch.randn(8)).shape)\n")
    done = _kernelscope(["run", str(script), "--store", str(tmp_path / "store")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"graph break at {script}:6: Unsupported Tensor.item() call" in done.stdout
    assert "hint: Set `torch._dynamo.config.capture_scalar_outputs = True`" in done.stdout
    with StoreBackend(tmp_path / "store", create=False) as store:
        (brk,) = store.show().graph_breaks
    assert "Tensor.item()" in brk.explanation and brk.url.startswith("https://")
    assert [frame.line for frame in brk.stack][-1] == 6
