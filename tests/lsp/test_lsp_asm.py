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
from lsp_support import REPO, _plain, start_session, uri
from synthetic_runs import workspace  # noqa: F401 - fixture

from kernelscope.store import StoreBackend


def exp_kernel_line(store: StoreBackend, path: str, line: int) -> tuple[str, int]:
    """(stored kernel file, 1-based line) of the softmax line's `exp` in its Triton kernel."""
    result = store.query(path, line, run_id=1)
    [kernel] = [kernel for chain in result.graphs for kernel in chain.kernels if kernel.kind == "triton"]
    return kernel.file, next(ref.line for ref in kernel.lines if "exp(" in ref.text)


@pytest.mark.slow
async def test_gpt2_softmax_line_reaches_mufu_ex2_in_the_language_server(gpt2_asm):
    root, path, line, [kernel_file] = gpt2_asm
    with StoreBackend(root) as store:
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


@pytest.mark.slow
async def test_hover_says_how_to_build_and_the_command_builds_in_the_engine_worker(recordings, tmp_path):
    path, line = gpt2_softmax_line()
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
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
    with StoreBackend(root) as store:
        assert store.run(1).asm_status().built == 1
    shutil.rmtree(root)


async def test_stage_files_answer_labels_and_bad_lines_and_unbuilt_kernels_say_how(workspace):
    """A hand-made build of the synthetic MLP's forward GELU kernel (no compile): a stage
    file's label line answers that it has no kernel line, a line past the end is an
    error, and the backward kernel, not built, says how to build it."""
    from pygls.exceptions import JsonRpcException
    from synthetic_runs import GELU_LINE, MLP_PATH, make_mlp_run, write_hand_made_build

    root = workspace / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(make_mlp_run(workspace))
        kernel_file, erf = write_hand_made_build(store, 1)
        [info] = store.run(1).asm_builds().values()
        backward = store.run(1).asm_unbuilt()[0]
    sass, kernel = root / info.files["sass"], root / kernel_file
    session = await start_session(workspace, {})
    try:
        session.open(workspace / MLP_PATH)
        hover = (await session.hover(workspace / MLP_PATH, GELU_LINE - 1)).contents.value
        assert "**below the kernel** (sm_90): 1 kernel · max 16 registers · 0 spills" in hover, hover
        assert "1 more kernel(s) not built yet — run the command *kernelscope: Build PTX/SASS*" in hover
        session.open(sass, sass.read_text())
        label = (await session.hover(sass, 1)).contents.value
        assert "`.L_x_0:`" in label and "no kernel line: a declaration, label or directive" in label
        assert await session.definition(sass, 1) is None
        up = (await session.hover(sass, 2)).contents.value
        assert f"from kernel line [{erf}]" in up and "MUFU.EX2" in up and f"mlp.py:{GELU_LINE}" in up
        with pytest.raises(JsonRpcException, match="out of range"):
            await session.hover(sass, 40)
        unbuilt = (await session.hover(root / backward, 17)).contents.value
        assert "**PTX/SASS**: not built yet" in unbuilt and f"kernelscope query {backward}:18 --asm" in unbuilt
        on_kernel = (await session.hover(kernel, erf - 1)).contents.value
        assert "[SASS :3](" in on_kernel and "MUFU.EX2 ×1" in on_kernel and "[PTX :1](" in on_kernel
    finally:
        await session.stop()
