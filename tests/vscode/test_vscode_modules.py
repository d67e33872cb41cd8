"""The VS Code run overview's module instances, in a real VS Code: code-server with
the built .vsix, driven through Chromium by Playwright
(vscode-extension/e2e/run-modules-e2e.mjs), on a workspace whose store holds a deep
model's run (tests/deep_model.py). Alike instances show as one folded row that opens
to its members; what the page showed is checked against the store's module groups.
Screenshots are kept in test-artifacts/vscode-modules/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import sys

import pytest
from deep_model import deep_store
from test_vscode_e2e import REPO, require_setup, run_in_code_server

from kernelscope.store.reading.folding import group_title

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

    results, scenario, stopped = run_in_code_server(tmp_path, workspace, SCENARIO, ARTIFACTS,
                                                    ["--group", group.label], timeout=300)
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
