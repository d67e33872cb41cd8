"""C++ kernels of Inductor's CPU backend in the language server, driven by a real LSP client
(pytest-lsp): examples/swiglu_mlp.py recorded on `--target cpu` (its kernels kept as `.cpp`
files). The SiLU line's hover links into the `.cpp` kernel; definition lands on the C++ line
computing its `exp`; that line, opened as C++, hovers back to the model line and its
references lead to it."""
from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import REPO, line_of, start_session, uri

from kernelscope.store import StoreBackend

SWIGLU = REPO / "examples" / "swiglu_mlp.py"
EXP_LINE = "auto tmp2 = tmp1.exp();"


@pytest.fixture(scope="module")
def cpu_store(recordings, tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp-cpp") / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(recordings.get("swiglu_mlp", device="cpu", train=True))
    return root


@pytest.mark.slow
async def test_silu_line_hovers_and_goes_to_the_cpp_exp_line_and_back(cpu_store):
    silu = line_of(SWIGLU, "F.silu(")  # 0-based
    session = await start_session(REPO, {"store": str(cpu_store)})
    try:
        session.open(SWIGLU)
        hover = (await session.hover(SWIGLU, silu)).contents.value
        assert "cpp_fused_mul_silu_0" in hover and "/kernels/cpp_fused_mul_silu_0.cpp#L" in hover, hover

        targets = [t for t in await session.definition(SWIGLU, silu) if t.uri.endswith(".cpp")]
        assert targets, "no definition in a .cpp kernel"
        kernel = Path(next(t.uri for t in targets if t.uri.endswith("/cpp_fused_mul_silu_0.cpp")).removeprefix("file://"))
        lines = kernel.read_text().splitlines()
        exp = next(number for number, text in enumerate(lines) if text.strip() == EXP_LINE)
        # definition lands on the kernel's first line the SiLU line computes (its input's load),
        # a line the store links back to the SiLU line, not shared loop code
        [landed] = [t.range.start.line for t in targets if t.uri == uri(kernel)]
        with StoreBackend(cpu_store) as store:
            answer = store.query(str(kernel), landed + 1, direction="up")
            assert all(not origin.reason.startswith("shared:") for origin in answer.origins)
            assert ("examples/swiglu_mlp.py", silu + 1) in {(s.file, s.line) for c in answer.graphs for s in c.sources}
            down = store.query(str(SWIGLU), silu + 1)
            assert any(ref.line == exp + 1 and ref.text.strip() == EXP_LINE
                       for chain in down.graphs for k in chain.kernels if k.kind == "cpp" for ref in k.lines)

        session.open(kernel)  # as C++ (languageId "cpp")
        back = (await session.hover(kernel, exp)).contents.value
        assert "post-grad" in back and "aten.exp" in back and f"examples/swiglu_mlp.py:{silu + 1}" in back, back
        references = await session.references(uri(kernel), exp)
        assert (uri(SWIGLU), silu) in {(ref.uri, ref.range.start.line) for ref in references}
    finally:
        await session.stop()
