"""Why it recompiled, in a real VS Code: code-server with the built .vsix, driven through
Chromium by Playwright (vscode-extension/e2e/run-why-e2e.mjs), on a workspace whose store
holds a run whose recompile one line caused (tests/synthetic_runs.py make_why_run). The
Problems panel names the line, the failed guard and the value; the hover on that line has
the guards, the recompile and the refused fusion (docs/why.md). Screenshots are kept in
test-artifacts/vscode-why/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import sys

import pytest
from synthetic_runs import FC1_LINE, make_why_run
from test_vscode_e2e import REPO, require_setup, run_in_code_server

from kernelscope.store import StoreBackend

SCENARIO = REPO / "vscode-extension" / "e2e" / "run-why-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode-why"

pytestmark = pytest.mark.slow


def test_the_line_that_caused_a_recompile_says_so_in_problems_and_hover(tmp_path):
    require_setup()
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ntarget = "examples/mlp.py:make"\n')
    (workspace / ".vscode" / "settings.json").write_text(json.dumps({"kernelscope.python": sys.executable}))
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_why_run(workspace))
    needle = (workspace / "examples" / "mlp.py").read_text().splitlines()[FC1_LINE - 1].strip()

    results, scenario, stopped = run_in_code_server(tmp_path, workspace, SCENARIO, ARTIFACTS,
                                                    ["--file", "mlp.py", "--needle", needle], timeout=300)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-3000:]}{scenario.stderr[-3000:]}")
    assert stopped["survivors"] == [], stopped
    [problem] = [text for text in results["problems"] if "recompiled [0/1] because of this line" in text]
    assert "x.size()[0]=16" in problem and f"[Ln {FC1_LINE}," in problem
    hover = results["hoverText"]
    assert "x.size()[0] <= 16" in hover and "recompiled" in hover and "not fused" in hover
