"""Below the kernel in the language server, driven by a real LSP client (pytest-lsp), on
Hugging Face GPT-2 with eager attention (a model nobody here wrote): the softmax line of
modeling_gpt2.py shows its kernel's registers and spills and links to the `MUFU.EX2`
instructions its `exp` became; go to definition from the kernel's exp line lands in the
PTX and SASS; the SASS file is a document the server answers in, up the chain to the
model line. Before a build, the hover says how to build, and `kernelscope.buildAsm`
builds in the engine worker."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import gpt2_softmax_line

from kernelscope.store import Store
from lsp_support import REPO, _plain, start_session, uri

pytestmark = pytest.mark.slow


def exp_kernel_line(store: Store, path: str, line: int) -> tuple[str, int]:
    """(stored kernel file, 1-based line) of the softmax line's `exp` in its Triton kernel."""
    result = store.query(path, line, run_id=1)
    [kernel] = [kernel for chain in result.graphs for kernel in chain.kernels if kernel.kind == "triton"]
    return kernel.file, next(ref.line for ref in kernel.lines if "exp(" in ref.text)


async def test_gpt2_softmax_line_reaches_mufu_ex2_in_the_language_server(gpt2_asm):
    root, path, line, [kernel_file] = gpt2_asm
    with Store(root) as store:
        _, exp_line = exp_kernel_line(store, path, line)
        [info] = store.run(1).asm_builds().values()
        mufu = [asm.line for asm in store.run(1).asm_below(kernel_file, [exp_line], ("sass",)).lines
                if asm.opcode == "MUFU.EX2"]
    assert mufu
    sass, ptx = root / info.files["sass"], root / info.files["ptx"]
    kernel = root / kernel_file
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(Path(path))
        hover = (await session.hover(Path(path), line - 1)).contents.value
        facts = info.facts
        assert f"**below the kernel** (sm_90): 1 kernel · max {facts.registers} registers · 0 spills" in hover, hover
        assert re.search(r"\[SASS :\d+ `MUFU\.EX2`\]\(file://[^)]+\.sass#L\d+\)", hover), hover

        # down: the kernel's exp line -> its PTX and SASS lines
        targets = await session.definition(kernel, exp_line - 1)
        by_file: dict[str, set[int]] = {}
        for target in targets:
            lines = range(target.range.start.line + 1, target.range.end.line + 1)
            by_file.setdefault(target.uri, set()).update(lines)
        assert set(by_file) == {uri(sass), uri(ptx)}
        assert set(mufu) <= by_file[uri(sass)]
        kernel_hover = (await session.hover(kernel, exp_line - 1)).contents.value
        assert f"{facts.registers} registers" in kernel_hover and "MUFU.EX2" in kernel_hover
        linked = _plain(await session.request("kernelscope/linkedRanges", {
            "textDocument": {"uri": uri(kernel)}, "position": {"line": exp_line - 1, "character": 0}}))
        [sass_link] = [link for link in linked["links"] if link["uri"] == uri(sass)]
        assert sass_link["role"] == "asm" and sass_link["label"] == f"SASS of {info.name}"
        assert set(mufu) <= {r["start"]["line"] + 1 for r in sass_link["ranges"]}

        # up: a MUFU.EX2 line of the SASS file -> kernel line, node, model line
        session.open(sass, sass.read_text())
        up = (await session.hover(sass, mufu[0] - 1)).contents.value
        assert f"SASS of kernel `{info.name}`" in up and "MUFU.EX2" in up
        assert f"from kernel line [{exp_line}]" in up and "post-grad" in up
        assert f"modeling_gpt2.py:{line}" in up, up
        references = await session.references(uri(sass), mufu[0] - 1)
        assert (uri(path), line - 1) in {(ref.uri, ref.range.start.line) for ref in references}
        [back] = await session.definition(sass, mufu[0] - 1)
        assert (back.uri, back.range.start.line) == (uri(kernel), exp_line - 1)
        [lens] = await session.lenses(uri(sass))
        assert lens.command.title.startswith(f"SASS of {info.name} · sm_90 · ") and lens.range.start.line == 0
        from_sass = _plain(await session.request("kernelscope/linkedRanges", {
            "textDocument": {"uri": uri(sass)}, "position": {"line": mufu[0] - 1, "character": 0}}))
        roles = {link["role"] for link in from_sass["links"]}
        assert {"kernel", "asm", "source", "post_grad"} <= roles, roles
        source = _plain(await session.request("kernelscope/sourceForLine", {
            "textDocument": {"uri": uri(sass)}, "position": {"line": mufu[0] - 1, "character": 0}}))
        assert (uri(path), line - 1) in {(s["uri"], s["range"]["start"]["line"]) for s in source["sources"]}

        # the editor's view of the model line's kernels, and the run overview's facts
        below = _plain(await session.request("kernelscope/asmForLine", {
            "textDocument": {"uri": uri(path)}, "position": {"line": line - 1, "character": 0}}))
        [entry] = below["kernels"]
        assert entry["status"] == "built" and entry["stages"]["sass"]["uri"] == uri(sass) and not below["how"]
        assert set(mufu) <= {r["start"]["line"] + 1 for r in entry["stages"]["sass"]["ranges"]}
        assert "MUFU." in sass.read_text().splitlines()[entry["stages"]["sass"]["focus"]]  # opens at a notable one
        overview = _plain(await session.request("kernelscope/runOverview", {}))
        assert overview["asm"]["built"] == 1 and overview["asm"]["buildable"] > 1
        [built] = [k for k in overview["kernels"] if k["asm"]]
        assert built["name"] == info.name and built["asm"]["registers"] == facts.registers
        assert built["asm"]["sassUri"] == uri(sass)
    finally:
        await session.stop()


async def test_hover_says_how_to_build_and_the_command_builds_in_the_engine_worker(recordings, tmp_path):
    path, line = gpt2_softmax_line()
    root = tmp_path / ".kernelscope"
    with Store(root) as store:
        store.write_run(recordings.get_zoo("gpt2", "make_eager_attention"))
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(Path(path))
        before = (await session.hover(Path(path), line - 1)).contents.value
        assert "**PTX/SASS**: not built yet — run the command *kernelscope: Build PTX/SASS* (`kernelscope.buildAsm`)" \
            in before, before
        pending = _plain(await session.request("kernelscope/asmForLine", {
            "textDocument": {"uri": uri(path)}, "position": {"line": line - 1, "character": 0}}))
        assert [k["status"] for k in pending["kernels"]] == ["not built"] and "kernelscope.buildAsm" in pending["how"]
        done = _plain(await session.command("kernelscope.buildAsm", {"uri": uri(path), "line": line - 1}))
        assert (done["asked"], done["built"], done["failed"]) == (1, 1, [])
        after = (await session.hover(Path(path), line - 1)).contents.value
        assert "**below the kernel** (sm_90): 1 kernel · max " in after and "MUFU.EX2" in after
        again = _plain(await session.command("kernelscope.buildAsm", {"uri": uri(path), "line": line - 1}))
        assert again["asked"] == 0  # built once, read from the store after that
    finally:
        await session.stop()
    with Store(root) as store:
        assert store.run(1).asm_status().built == 1
    shutil.rmtree(root)
