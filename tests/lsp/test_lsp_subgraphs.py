"""Higher-order ops' subgraphs in the language server, driven by a real LSP client
(pytest-lsp): a `torch.cond` branch line's hover names the branch's subgraph by its label
("cond: true branch of Gate.forward (cond_branch.py:25)") and go to definition opens the
branch's own kernel. Recorded once per session (conftest.RecordingCache), virtual-cuda."""
from __future__ import annotations

import pytest
from conftest import example_line
from lsp_support import REPO, start_session

from kernelscope.store import StoreBackend

pytestmark = pytest.mark.slow


async def test_cond_branch_line_hover_names_its_subgraph_and_definition_opens_its_kernel(recordings, tmp_path):
    run = recordings.get("cond_branch")
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(run)
    (true_branch,) = [g for g in run.graphs if g.subgraph is not None and g.subgraph.role == "true branch"]
    (kernel,) = [k for k in true_branch.kernels if k.kind == "triton"]
    source = REPO / "examples" / "cond_branch.py"
    line = example_line("cond_branch", "torch.sigmoid(h)")
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(source)
        hover = (await session.hover(source, line - 1)).contents.value
        label = f"cond: true branch of Gate.forward (cond_branch.py:{example_line('cond_branch', 'torch.cond(')})"
        assert label in hover, hover
        assert "false branch" not in hover  # the other branch's line is not this one
        targets = await session.definition(source, line - 1)
        assert any(target.uri.endswith(f"/graphs/{true_branch.key}/kernels/{kernel.name}.py") for target in targets), [
            target.uri for target in targets]
    finally:
        await session.stop()
