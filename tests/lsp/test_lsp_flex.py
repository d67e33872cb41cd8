"""FlexAttention's mask_mod in the language server, driven by a real LSP client (pytest-lsp):
from the mask_mod's line (`return q_idx >= kv_idx` in examples/flex_attention_train.py),
hover names the FlexAttention template kernels and go to definition lands in the template on
the line that computes the comparison; references from that template line come back to the
mask_mod's line. The training script is recorded once per session (conftest.RecordingCache)."""
from __future__ import annotations

import pytest
from lsp_support import REPO, line_of, start_session, uri

from kernelscope.store import StoreBackend

pytestmark = pytest.mark.slow

SCRIPT = REPO / "examples" / "flex_attention_train.py"


async def test_a_mask_mod_line_goes_to_the_template_line_that_applies_it(recordings, tmp_path):
    with StoreBackend(tmp_path / "store") as store:
        store.write_run(recordings.get_script("flex_attention_train", "--steps", "1"))
    causal = line_of(SCRIPT, "return q_idx >= kv_idx")  # 0-based
    session = await start_session(REPO, {"store": str(tmp_path / "store")})
    try:
        session.open(SCRIPT)
        hover = (await session.hover(SCRIPT, causal)).contents.value
        assert "triton_tem_fused" in hover, hover
        targets = [target for target in await session.definition(SCRIPT, causal) if "/kernels/triton_tem" in target.uri]
        assert targets, "no definition in a template kernel"
        for target in targets:
            path = target.uri.removeprefix("file://")
            with open(path) as kernel:
                text = kernel.read().splitlines()[target.range.start.line]
            assert ">=" in text, text  # the mask_mod's comparison, inlined into the template
        references = await session.references(targets[0].uri, targets[0].range.start.line)
        assert (uri(SCRIPT), causal) in {(ref.uri, ref.range.start.line) for ref in references}
    finally:
        await session.stop()
