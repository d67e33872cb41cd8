"""Workspace trust, end to end in a real VS Code: code-server WITH workspace trust on
(the other VS Code tests turn it off), the built .vsix, Chromium driven by Playwright
(vscode-extension/e2e/run-trust-e2e.mjs).

The folder is a cloned repository the fresh profile does not trust: its
.vscode/settings.json names as `kernelscope.python` a script that writes a marker file
(and would then start the real interpreter), and its store holds a run of
examples/mlp.py. The user's own settings name the venv's python. The scenario declines
the trust prompt; in Restricted Mode the marker is never written, the server runs with
the user's interpreter outside the folder, a hover answers from the folder's store, and
"kernelscope: Compile" is refused with the reason. Granting trust then restarts the
server with the folder's interpreter, which does write the marker: the marker is what
running the workspace's setting looks like. A second run trusts the folder right at the
prompt: the server then runs trusted, in the folder, with its settings. Screenshots in
test-artifacts/vscode-trust/ and test-artifacts/vscode-trust-at-prompt/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from synthetic_runs import make_mlp_run
from test_vscode_e2e import REPO, require_setup, run_in_code_server

from kernelscope.store import StoreBackend

SCENARIO = REPO / "vscode-extension" / "e2e" / "run-trust-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode-trust"
ARTIFACTS_AT_PROMPT = REPO / "test-artifacts" / "vscode-trust-at-prompt"
SERVER_ARGS = ["-m", "kernelscope", "lsp"]

pytestmark = pytest.mark.slow


def cloned_workspace(root: Path) -> tuple[Path, Path]:
    """(the folder, the marker file its interpreter setting writes when it runs)."""
    workspace = root / "cloned-repo"
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ntarget = "examples/mlp.py:make"\n')
    marker = root / "MARKER-workspace-python-ran"
    script = workspace / "tools" / "python"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(
        {"kernelscope.python": "${workspaceFolder}/tools/python"}, indent=2))
    return workspace, marker


def inside(path: str, folder: Path) -> bool:
    return Path(path) == folder or folder in Path(path).parents


def test_untrusted_folder_runs_nothing_it_names(tmp_path):
    require_setup()
    workspace, marker = cloned_workspace(tmp_path)
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    results, scenario, stopped = run_in_code_server(
        tmp_path, workspace, SCENARIO, ARTIFACTS, ["--marker", str(marker)], timeout=420,
        user_settings={"kernelscope.python": sys.executable}, workspace_trust=True)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-4000:]}{scenario.stderr[-4000:]}")
    assert stopped["survivors"] == [], f"processes left running: {stopped}"

    # Restricted Mode: the status bar and a notification say why nothing compiles.
    restricted = results["restricted"]
    assert restricted["status"].endswith("kernelscope: run 1 · restricted"), restricted
    assert "not trusted (Restricted Mode)" in restricted["notification"]["message"]
    assert sys.executable in restricted["notification"]["message"]
    assert "Manage Workspace Trust" in restricted["notification"]["buttons"]

    # The server runs with the user's interpreter, outside the folder, and nothing the folder names ran.
    (server,) = results["restricted"]["server"]
    assert server["argv"] == [sys.executable, *SERVER_ARGS], server
    assert not inside(server["cwd"], workspace) and server["safePath"] == "1", server
    assert results["serverBeforeTrust"] == results["restricted"]["server"]  # the same server throughout
    assert results["markerBeforeTrust"] is False
    log = "\n".join(path.read_text() for path in ARTIFACTS.glob("*kernelscope*.log"))
    assert "Restricted Mode: the workspace is not trusted" in log
    assert f"Interpreter: {sys.executable} (from user-setting), started in {server['cwd']}" in log

    # Reading the folder's store works: the hover names the GELU line's kernel.
    assert "triton_poi_fused_gelu" in results["hoverText"], results["hoverText"]

    # A compile is refused, with why and how to trust the folder.
    refusal = results["compile"]["message"]
    assert refusal.startswith("kernelscope: compiling refused: this workspace is not trusted"), refusal
    assert "Manage Workspace Trust" in refusal and "Manage Workspace Trust" in results["compile"]["buttons"]
    assert results["compile"]["status"].endswith("· restricted")
    runs = [run.id for run in StoreBackend(workspace / ".kernelscope", create=False).runs()]
    assert runs == [1], runs

    # Trust granted: the server restarts with the folder's own interpreter setting (which is
    # what writes the marker), in the folder.
    assert results["trusted"]["status"].endswith("kernelscope: run 1"), results["trusted"]
    (trusted,) = results["trusted"]["server"]
    assert trusted["cwd"] == str(workspace) and trusted["safePath"] is None, trusted
    assert results["markerAfterTrust"] is True
    assert log.count("The workspace is trusted now: restarting") == 1, log  # one restart, not one per event
    assert f"{workspace}/tools/python" in marker.read_text()


def test_folder_trusted_at_the_prompt_uses_its_settings(tmp_path):
    """Trusting at the prompt (the extension may start while the prompt is open) ends with
    one server in the folder, started through the folder's interpreter setting."""
    require_setup()
    workspace, marker = cloned_workspace(tmp_path)
    if ARTIFACTS_AT_PROMPT.exists():
        shutil.rmtree(ARTIFACTS_AT_PROMPT)
    results, scenario, stopped = run_in_code_server(
        tmp_path, workspace, SCENARIO, ARTIFACTS_AT_PROMPT, ["--marker", str(marker), "--trust-at-prompt"],
        timeout=300, user_settings={"kernelscope.python": sys.executable}, workspace_trust=True)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-4000:]}{scenario.stderr[-4000:]}")
    assert stopped["survivors"] == [], f"processes left running: {stopped}"
    assert results["trusted"]["status"].endswith("kernelscope: run 1"), results["trusted"]
    (server,) = results["trusted"]["server"]
    assert server["cwd"] == str(workspace) and server["safePath"] is None, server
    assert results["markerAfterTrust"] is True
    assert f"{workspace}/tools/python -m kernelscope lsp" in marker.read_text()
