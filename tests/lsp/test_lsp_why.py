"""The language server says why at the line that caused it (docs/why.md): a recompile's
diagnostic sits on the line whose guard failed, with the values, advice and a quick fix;
hover shows the line's guards, recompiles and refused fusions. A synthetic run (fast)."""
from __future__ import annotations

import pytest
from lsp_support import start_session, uri
from lsprotocol import types
from synthetic_runs import FC1_LINE, GELU_LINE, make_why_run

from kernelscope.store import StoreBackend


@pytest.fixture
def why_workspace(tmp_path):
    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(make_why_run(tmp_path))
    return tmp_path


async def test_recompile_and_guard_diagnostics_sit_on_the_causing_line_with_a_quick_fix(why_workspace):
    session = await start_session(why_workspace, {})
    try:
        source = why_workspace / "examples" / "mlp.py"
        session.open(source)
        found = await session.wait_for_diagnostics(source, lambda d: any(x.code == "recompile" for x in d))
        [recompile] = [d for d in found if d.code == "recompile"]
        assert recompile.range.start.line == FC1_LINE - 1  # not the frame's first line
        assert "recompiled [0/1] because of this line" in recompile.message
        assert "guard of [0/0] failed: tensor 'x' size mismatch" in recompile.message
        assert "x.size()[0]=16" in recompile.message and "torch._dynamo.mark_dynamic(x, 0)" in recompile.message
        [guard] = [d for d in found if d.code == "shape-guard"]
        assert guard.range.start.line == FC1_LINE - 1 and "x.size()[0] <= 16" in guard.message
        assert "2147483647" not in guard.message  # Inductor's own bound is not the line's doing
        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri(source)), range=recompile.range,
            context=types.CodeActionContext(diagnostics=[recompile])))
        assert actions and "assume_static_by_default = False" in actions[0].edit.changes[uri(source)][0].new_text
    finally:
        await session.stop()


async def test_hover_has_the_why_sections(why_workspace):
    session = await start_session(why_workspace, {})
    try:
        source = why_workspace / "examples" / "mlp.py"
        session.open(source)
        fc1 = (await session.hover(source, FC1_LINE - 1)).contents.value
        assert "**guards**" in fc1 and "x.size()[0] <= 16" in fc1
        assert "**recompiles**" in fc1 and "advice: torch._dynamo.mark_dynamic" in fc1
        assert "**not fused**" in fc1 and f"at line {GELU_LINE}" in fc1 and "extern: node1 is extern or nop" in fc1
        gelu = (await session.hover(source, GELU_LINE - 1)).contents.value
        assert "**not fused**" in gelu and f"at line {FC1_LINE}" in gelu and "**recompiles**" not in gelu
    finally:
        await session.stop()
