"""Below the kernel and distributed jobs in a real VS Code: code-server with the built
.vsix, driven through Chromium by Playwright (vscode-extension/e2e/run-below-e2e.mjs).
The workspace's store holds GPT-2 (eager attention; a model nobody here wrote) with its
softmax kernel built to PTX and SASS (run 1), the Llama TP block as rank 0 of a faked
8-rank job (run 2) and both ranks of a real 2-rank gloo job under torchrun (runs 3, 4).
Checked against the store: the status bar and run picker show ranks; the run overview
shows the rank, which ranks compiled identical code and each graph's
compute/communication order; a collective's wrapper line hovers with its model line and
layer and goes to that model line; the overview lists registers and spills; "Show SASS
beside" on the kernel's exp line opens its SASS with the `MUFU.EX2` lines highlighted,
and a SASS line highlights the exp line back. Screenshots: test-artifacts/vscode-below/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import sys

import pytest
from conftest import EXAMPLES, gpt2_softmax_line
from test_vscode_e2e import REPO, require_setup, run_in_code_server

from kernelscope.store import StoreBackend

SCENARIO = REPO / "vscode-extension" / "e2e" / "run-below-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode-below"

pytestmark = pytest.mark.slow


def line_of(path, needle: str) -> int:
    return next(number for number, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def build_store(root, recordings, gloo_ranks) -> dict:
    """Runs 1-4 (see the module docstring); what the scenario needs to know of them."""
    from kernelscope.engine.asm_build import build_run_asm

    path, line = gpt2_softmax_line()
    with StoreBackend(root) as store:
        assert store.write_run(recordings.get_zoo("gpt2", "make_eager_attention")) == 1
        assert store.write_run(recordings.get_distributed("llama_tp.py:make", world_size=8, train=True)) == 2
        for rank in (0, 1):
            store.merge_from(gloo_ranks / f"rank-{rank}")
        view = store.run(1)
        result = view.query(path, line)
        [kernel] = [k for chain in result.graphs for k in chain.kernels if k.kind == "triton"]
        assert build_run_asm(store, 1, list(store.asm.kernel_ids_of_files([kernel.file]).values())).built == 1
        exp_line = next(ref.line for ref in kernel.lines if "exp(" in ref.text)
        below = view.asm_below(kernel.file, [exp_line], ("sass",))
        collectives = {run_id: next(c for c in store.run(run_id).distributed().graphs[0].collectives
                                    if c.role == "issue") for run_id in (2, 4)}
        return {"kernel": kernel.name, "exp_line": exp_line, "info": below.info,
                "sass": {asm.line for asm in below.lines},
                "mufu": sorted(asm.line for asm in below.lines if asm.opcode == "MUFU.EX2"),
                "collectives": collectives}


def test_below_the_kernel_and_ranks_in_code_server(recordings, gloo_ranks, tmp_path):
    require_setup()
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text("[tool.kernelscope]\n")
    (workspace / ".vscode" / "settings.json").write_text(json.dumps({"kernelscope.python": sys.executable}))
    known = build_store(workspace / ".kernelscope", recordings, gloo_ranks)

    results, scenario, stopped = run_in_code_server(
        tmp_path, workspace, SCENARIO, ARTIFACTS,
        ["--exp-line", str(known["exp_line"]), "--mufu-line", str(known["mufu"][0])], timeout=420)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-3000:]}{scenario.stderr[-3000:]}")
    assert stopped["survivors"] == [], stopped

    # ranks: the status bar and the run picker
    assert results["status"].endswith("kernelscope: run 4 · rank 1/2"), results["status"]
    assert results["statusFaked"].endswith("kernelscope: run 2 · rank 0/8"), results["statusFaked"]
    picker = results["runPicker"]
    assert any("Run 2 —" in row and "rank 0 of 8 (fake)" in row for row in picker), picker
    assert any("Run 4 —" in row and "rank 1 of 2 (gloo)" in row for row in picker), picker
    assert not any("rank" in row for row in picker if "Run 1 —" in row)

    # the run overview's Distributed section, and a collective's wrapper line, on both jobs
    source = EXAMPLES / "distributed" / "llama_tp.py"
    attention_call = line_of(source, "h = x + self.attention(self.attention_norm(x))")
    for run_id, key, ranks, rank in ((4, "Real", 2, "rank 1 of 2 (gloo)"), (2, "Faked", 8, "rank 0 of 8 (fake)")):
        overview = results[f"overview{key}"]
        assert "Distributed" in overview["sections"] and overview["rank"].startswith(rank), overview["rank"]
        assert overview["meta"].startswith(rank.split(" (")[0] + " · ")  # the header: `rank 1 of 2 · gloo ...`
        forward = overview["graphs"][0]
        assert forward["title"] == "0/0 forward"
        assert forward["order"].count("all_gather_into_tensor") == 2 and forward["order"].count("wait") == 4
        assert forward["collectives"][0].startswith(f"all_gather_into_tensor over {ranks} ranks")
        assert "layer attention (Attention) · PrepareModuleInput input S(1) -> R" in forward["collectives"][0]
        collective = known["collectives"][run_id]
        hovered = results[key.lower()]
        assert hovered["line"] == collective.wrapper_lines[0]
        hover = hovered["hover"]
        assert "issue all_gather_into_tensor group" in hover and f"over {ranks} ranks" in hover, hover
        assert f"llama_tp.py:{attention_call} in forward" in hover and "layer: attention (Attention)" in hover
    assert results["overviewReal"]["code"] == ["identical code on ranks 0, 1 (every graph's wrapper and kernels)"]
    assert results["real"]["definition"] == {"tab": "llama_tp.py", "line": attention_call}

    # below the kernel: the overview's registers and spills, then the SASS beside the kernel
    info = known["info"]
    gpt2 = results["overviewGpt2"]
    assert gpt2["below"].startswith("Below the kernel: 1 of ") and "Build PTX/SASS for this run" in gpt2["below"]
    headers = gpt2["kernelHeaders"]
    [row] = [row for row in gpt2["kernelRows"] if row[headers.index("SASS")] == "SASS"]
    assert row[0] == info.name and row[headers.index("registers")] == str(info.facts.registers)
    occupancy = f"{round(info.facts.occupancy.share * 100)}% ({info.facts.occupancy.limited_by})"
    assert row[headers.index("spills")] == "0" and row[headers.index("occupancy")] == occupancy
    sass = results["sass"]
    assert sass["kernel"] == known["kernel"] and sass["sassTab"] == f"{known['kernel']}.sass"
    log = ARTIFACTS / "kernelscope.log"
    assert sass["kernelOrigin"] == [known["exp_line"]], (
        sass["seen"], log.read_text()[-3000:] if log.exists() else "no kernelscope.log")
    shown = set(sass["sassLines"])
    assert shown and shown <= known["sass"], (sorted(shown), sorted(known["sass"]))
    assert sass["mufuShown"] and set(known["mufu"]) & shown
    assert sass["up"]["kernelLines"] == [known["exp_line"]]
    assert f"from kernel line {known['exp_line']}" in sass["upHover"] and "MUFU.EX2" in sass["upHover"]
