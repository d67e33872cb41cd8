"""The VS Code run overview's module instances, in a real VS Code: code-server with
the built .vsix, driven through Chromium by Playwright
(vscode-extension/e2e/run-modules-e2e.mjs), on a workspace whose store holds a deep
model's run (tests/deep_model.py). Alike instances show as one folded row that opens
to its members; what the page showed is checked against the store's module groups.
Screenshots are kept in test-artifacts/vscode-modules/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from deep_model import deep_store
from kernelscope.store.folding import group_title
from test_vscode_e2e import CODE_SERVER, REPO, USER_SETTINGS, free_port, require_setup, stop_tree, vsix_path, wait_for_port

SCENARIO = REPO / "vscode-extension" / "e2e" / "run-modules-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode-modules"

pytestmark = pytest.mark.slow


def test_run_overview_folds_alike_module_instances(recordings, tmp_path):
    require_setup()
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ntarget = "examples/nanogpt.py:make"\n')
    (workspace / ".vscode" / "settings.json").write_text(json.dumps({"kernelscope.python": sys.executable}))
    store = deep_store(recordings, workspace / ".kernelscope")
    groups = store.run().module_groups()
    store.close()
    blocks = next(group for group in groups if group.label == "blocks")
    folded = [group for group in blocks.children if group.folded]
    assert folded, [group.label for group in blocks.children]
    group = max(folded, key=lambda g: len(g.members))

    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    xdg = tmp_path / "xdg"
    env = dict(os.environ, XDG_CONFIG_HOME=str(xdg / "config"), XDG_DATA_HOME=str(xdg / "data"),
               XDG_CACHE_HOME=str(xdg / "cache"), XDG_STATE_HOME=str(xdg / "state"))
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    install = subprocess.run([str(CODE_SERVER), *common, "--install-extension", str(vsix_path())],
                             env=env, capture_output=True, text=True, timeout=180)
    assert install.returncode == 0, install.stdout + install.stderr

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(ARTIFACTS / "code-server.log", "w") as server_log:
        code_server = subprocess.Popen(
            [str(CODE_SERVER), *common, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none",
             "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
             "--disable-getting-started-override", str(workspace)],
            env=env, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_port(port, code_server)
            scenario = subprocess.run(
                ["node", str(SCENARIO), "--url", f"http://127.0.0.1:{port}/?folder={workspace}",
                 "--out", str(ARTIFACTS), "--group", group.label],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        finally:
            stopped = stop_tree(code_server)
    (ARTIFACTS / "scenario.log").write_text(scenario.stdout + scenario.stderr)
    results = json.loads((ARTIFACTS / "results.json").read_text())
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-3000:]}{scenario.stderr[-3000:]}")
    assert stopped["survivors"] == [], stopped

    closed, opened = results["closed"], results["opened"]
    assert closed["top"] == [group_title(g) for g in groups]
    # One row per folded group, titled as the store folds it; closed, its members are hidden.
    expected = [group_title(g) for parent in groups for g in parent.children if g.folded]
    assert expected == [f"{group.label} ({len(group.members)} × Block)"]
    assert len(closed["folded"]) == 1 and closed["folded"][0].startswith(expected[0] + " ")
    assert closed["folded"][0].endswith("each · same kernels")
    assert closed["visibleMembers"] == []
    # The first and last block differ from the others: instances of their own, with their submodules.
    assert "blocks.0 (Block)" in closed["instances"] and "blocks.0.attn (CausalSelfAttention)" in closed["instances"]
    assert not any(title.startswith(f"{group.members[0]} ") for title in closed["instances"])
    # Opened, the group lists every member.
    assert opened["visibleMembers"] == group.members
