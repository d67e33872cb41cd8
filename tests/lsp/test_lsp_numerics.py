"""The editor shows `kernelscope numerics`: a warning at the line where compiled and eager part
ways, information at lines whose kernel outputs are beyond tolerance, and the numbers in the
hover (a real server, a real client, a store recorded by `kernelscope numerics`)."""
from __future__ import annotations

import json

import pytest
from lsp_support import REPO, line_of, start_session
from program_runs import kernelscope

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "numerics_fp16_overflow.py"


@pytest.fixture(scope="module")
def numerics_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("lsp-numerics") / "store"
    done = kernelscope("numerics", "examples/numerics_fp16_overflow.py:make", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["first_divergence"]["line"] == 13
    return store


async def test_divergence_is_a_diagnostic_and_its_numbers_are_in_the_hover(numerics_store):
    session = await start_session(REPO, {"store": str(numerics_store)})
    try:
        session.open(EXAMPLE)
        product, returned = line_of(EXAMPLE, "product = shifted * b"), line_of(EXAMPLE, "return scaled.relu()")
        found = await session.wait_for_diagnostics(
            EXAMPLE, lambda d: any(x.code == "numerics-divergence" for x in d))
        (first,) = [d for d in found if d.code == "numerics-divergence"]
        assert first.range.start.line == product  # the product's line, not its neighbours
        assert "compiled and eager part ways here: node mul (aten.mul.Tensor)" in first.message
        assert "left to eager: the divergence is gone" in first.message
        (over,) = [d for d in found if d.code == "numerics"]
        assert over.range.start.line == returned and "beyond tolerance against eager" in over.message
        hover = await session.hover(EXAMPLE, product)
        assert "**numerics** compiled and eager part ways here" in hover.contents.value
        assert "max abs inf" in hover.contents.value and "compiled is closer" in hover.contents.value
        neighbour = await session.hover(EXAMPLE, line_of(EXAMPLE, "shifted = a + 1.0"))
        assert "**numerics**" not in neighbour.contents.value
    finally:
        await session.stop()
