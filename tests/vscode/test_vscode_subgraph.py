"""A higher-order op's subgraph in a real VS Code: code-server with the built .vsix, driven
through Chromium by Playwright (vscode-extension/e2e/run-subgraph-e2e.mjs), on a workspace
whose store holds examples/cond_branch.py's run. Hovering a line of `torch.cond`'s true
branch names the branch's subgraph by its label, and F12 there opens the branch's own
kernel; both checked against the store. Screenshots are kept in test-artifacts/vscode-subgraph/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import shutil
import sys

import pytest
from conftest import example_line
from test_vscode_e2e import REPO, require_setup, run_in_code_server

from kernelscope.store import StoreBackend

SCENARIO = REPO / "vscode-extension" / "e2e" / "run-subgraph-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode-subgraph"

pytestmark = pytest.mark.slow


def test_cond_branch_hover_shows_its_subgraph_and_f12_opens_its_kernel(recordings, tmp_path, monkeypatch):
    require_setup()
    workspace = tmp_path / "workspace"
    (workspace / "examples").mkdir(parents=True)
    (workspace / ".vscode").mkdir()
    shutil.copy(REPO / "examples" / "cond_branch.py", workspace / "examples" / "cond_branch.py")
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ntarget = "examples/cond_branch.py:make"\n')
    (workspace / ".vscode" / "settings.json").write_text(json.dumps({"kernelscope.python": sys.executable}))
    run = recordings.get("cond_branch")
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(run)
    (branch,) = [g for g in run.graphs if g.subgraph is not None and g.subgraph.role == "true branch"]
    (kernel,) = [k for k in branch.kernels if k.kind == "triton"]
    line = example_line("cond_branch", "torch.sigmoid(h)")
    # the run was recorded in the repository: the workspace holds a copy of its file
    monkeypatch.setenv("KERNELSCOPE_MAP_PATH", f"{REPO}={workspace}")

    results, scenario, stopped = run_in_code_server(
        tmp_path, workspace, SCENARIO, ARTIFACTS,
        ["--file", "cond_branch.py", "--line", str(line), "--needle", "torch.sigmoid(h)", "--word", "sigmoid"],
        timeout=300)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-3000:]}{scenario.stderr[-3000:]}")
    assert stopped["survivors"] == [], stopped
    assert branch.subgraph.label in results["hoverText"], results["hoverText"]
    assert kernel.name in results["hoverText"]
    assert results["definition"]["tab"] == f"{kernel.name}.py", results["definition"]
    # kernel names are unique in a run: the tab is the branch's kernel, not the parent's
    assert [g.key for g in run.graphs for k in g.kernels if k.name == kernel.name] == [branch.key]
