"""End-to-end tests of `python -m kernelscope lsp` driven by a real LSP client (pytest-lsp).

The slow tests read a store holding real recordings of the examples (recorded once
per session); the fast ones use a small synthetic run and check robustness.
"""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA
from lsp_support import REPO, _plain, line_of, start_session, uri
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from synthetic_runs import make_mlp_run

from kernelscope.store import StoreBackend

EXAMPLES = REPO / "examples"
MLP = EXAMPLES / "mlp.py"
GRAPH_BREAK = EXAMPLES / "graph_break.py"
DEVICE = "virtual-cuda"  # the default target; kernel names differ by target, so tests match "gelu"


def test_server_never_imports_torch():
    code = (
        "import sys\n"
        "from kernelscope.cli import build_parser\n"
        "build_parser(only='lsp')\n"
        "from kernelscope.lsp import server\n"
        "created = server.create_server()\n"
        "assert not created.failed_features, created.failed_features\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_help_ends_with_examples(run_cli):
    result = run_cli(["lsp", "--help"])
    assert result.returncode == 0
    assert "examples:" in result.stdout and "kernelscope lsp" in result.stdout


# -- a synthetic store: fast robustness tests ----------------------------------------------


@pytest.fixture
def synthetic(tmp_path):
    record = make_mlp_run(tmp_path)
    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(record)
    return tmp_path


async def test_bad_requests_get_errors_and_the_server_goes_on(synthetic):
    session = await start_session(synthetic, {})
    try:
        source = synthetic / "examples" / "mlp.py"
        session.open(source)
        with pytest.raises(JsonRpcException, match="out of range"):
            await session.hover(source, 5000)
        with pytest.raises(JsonRpcException):  # not a hover's parameters at all
            await session.raw_request(types.TEXT_DOCUMENT_HOVER, {"textDocument": 3})
        with pytest.raises(JsonRpcException, match="expected"):
            await session.request("kernelscope/linkedRanges", {"position": {"line": -1}})
        with pytest.raises(JsonRpcException):
            await session.request("kernelscope/noSuchRequest", {})
        with pytest.raises(JsonRpcException, match="no run 99"):
            await session.command("kernelscope.selectRun", 99)
        with pytest.raises(JsonRpcException, match="run id or null"):
            await session.command("kernelscope.selectRun", "latest")
        with pytest.raises(JsonRpcException, match="no run 42"):
            await session.request("kernelscope/runOverview", {"runId": 42})
        # Still answering: a real hover on the GELU line of the synthetic run.
        hover = await session.hover(source, line_of(source, "gelu(h)"))
        assert hover is not None and "triton_poi_fused_gelu" in hover.contents.value
        assert await session.hover(synthetic / "not_recorded.py", 0) is None
    finally:
        await session.stop()


async def test_stale_file_maps_lines_by_content_and_says_so(synthetic):
    session = await start_session(synthetic, {})
    try:
        source = synthetic / "examples" / "mlp.py"
        original = source.read_text().splitlines()
        gelu = line_of(source, "gelu(h)")
        edited = ["# a new comment", "# another", *original]
        session.open(source, "\n".join(edited) + "\n")
        moved = await session.hover(source, gelu + 2)
        assert moved is not None
        assert "stale" in moved.contents.value and f"recorded line {gelu + 1}" in moved.contents.value
        assert "triton_poi_fused_gelu" in moved.contents.value
        new_line = await session.hover(source, 0)
        assert new_line is None or "triton" not in new_line.contents.value
        lenses = await session.lenses(uri(source))
        assert {lens.range.start.line for lens in lenses} >= {gelu + 2}
        assert all("stale" in lens.command.title for lens in lenses)
        # A changed line is not answered for: no silent jump to another line.
        changed = list(edited)
        changed[gelu + 2] = "        h = torch.relu(h)"
        session.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri(source), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="\n".join(changed) + "\n")]))
        hover = await session.hover(source, gelu + 2)
        assert hover is not None and "changed since run" in hover.contents.value
        assert "triton_poi_fused_gelu" not in hover.contents.value
        assert await session.definition(source, gelu + 2) is None
    finally:
        await session.stop()


# -- real recordings of the examples ---------------------------------------------------------


@pytest.fixture(scope="module")
def example_store(recordings, tmp_path_factory):
    """mlp (train: forward and backward) and graph_break, recorded for real, in one store."""
    root = tmp_path_factory.mktemp("lsp-store")
    with StoreBackend(root) as store:
        runs = {
            "mlp": store.write_run(recordings.get("mlp", device=DEVICE, train=True)),
            "graph_break": store.write_run(recordings.get("graph_break", device=DEVICE)),
        }
    return root, runs


@pytest.fixture
async def examples(example_store):
    session = await start_session(REPO, {"store": str(example_store[0])})
    yield session
    await session.stop()


@pytest.mark.slow
async def test_hover_on_a_model_line_shows_kernels_per_graph(examples):
    examples.open(MLP)
    hover = await examples.hover(MLP, line_of(MLP, "F.gelu(h)"))
    text = hover.contents.value
    assert "forward [0/0]" in text and "backward [0/0]" in text
    assert re.search(r"\[`triton_\w+gelu\w*`\]\(file://\S+/kernels/triton_\w+gelu\w*\.py#L\d+\)", text)  # a link
    assert "fused with" in text and f"mlp.py#L{line_of(MLP, 'self.norm(h)') + 1}" in text
    fc1 = (await examples.hover(MLP, line_of(MLP, "self.fc1(x)"))).contents.value
    assert re.search(r"`extern_kernels\.(mm|addmm)` extern", fc1) and "wrapper L" in fc1
    assert "`fc1` (Linear)" in fc1  # grouped by module instance
    # memory: what the line saves for the backward, with the backward kernels that read it
    assert re.search(r"saves `addmm` 16x128 float32 \(8\.0 KiB\) for backward, read by `triton_\w+`", fc1)
    assert "live at the peak of graph 0_0_0-backward" in fc1
    assert "recomputes" in text  # GELU: recomputed in the backward instead of saved
    assert await examples.hover(MLP, line_of(MLP, "import torch")) is None


@pytest.mark.slow
async def test_hover_on_an_outer_line_summarises_per_module_instance(recordings, tmp_path):
    blocks = DATA / "lsp_blocks.py"
    with StoreBackend(tmp_path / "store") as store:
        store.write_run(recordings.get_spec(f"{blocks}:make", DEVICE))
    session = await start_session(REPO, {"store": str(tmp_path / "store")})
    try:
        session.open(blocks)
        text = (await session.hover(blocks, line_of(blocks, "    x = block(x)"))).contents.value
        assert "`blocks.0` (Block)" in text and "`blocks.1` (Block)" in text
        assert "gelu" in text
        lenses = {lens.range.start.line: lens.command.title for lens in await session.lenses(uri(blocks))}
        assert "kernel" in lenses[line_of(blocks, "    x = block(x)")]
        hints = await session.client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri(blocks)),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=40, character=0))))
        gelu = line_of(blocks, "gelu(")
        assert any(hint.position.line == gelu and "gelu" in hint.label for hint in hints)
    finally:
        await session.stop()


@pytest.mark.slow
async def test_definition_lands_on_a_kernel_line_that_computes_the_line(examples, example_store):
    gelu = line_of(MLP, "F.gelu(h)")
    targets = await examples.definition(MLP, gelu)
    assert targets, "no definition"
    kernel_targets = [t for t in targets if "/kernels/" in t.uri]
    assert any("gelu" in Path(t.uri).name for t in kernel_targets)
    # Each kernel target is a line the store links back to the GELU line (not shared indexing).
    with StoreBackend(example_store[0]) as store:
        for target in kernel_targets:
            path = target.uri.removeprefix("file://")
            answer = store.query(path, target.range.start.line + 1, direction="up")
            assert any(origin.reason and not origin.reason.startswith("shared:") for origin in answer.origins)
            assert ("examples/mlp.py", gelu + 1) in {(s.file, s.line) for c in answer.graphs for s in c.sources}
    # Several graphs -> several targets (the editor's picker): forward and backward kernels.
    assert len({t.uri for t in kernel_targets}) >= 2


@pytest.mark.slow
async def test_references_from_a_kernel_line_lead_back_to_the_model(examples):
    gelu = line_of(MLP, "F.gelu(h)")
    target = next(t for t in await examples.definition(MLP, gelu) if "/kernels/" in t.uri)
    references = await examples.references(target.uri, target.range.start.line)
    assert (uri(MLP), gelu) in {(ref.uri, ref.range.start.line) for ref in references}
    hover = await examples.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=target.uri), position=target.range.start))
    text = hover.contents.value
    assert "post-grad" in text and "aten." in text and f"examples/mlp.py:{gelu + 1}" in text


@pytest.mark.slow
async def test_code_lenses_over_model_lines_and_kernel_definitions(examples):
    examples.open(MLP)
    lenses = {lens.range.start.line: lens.command.title for lens in await examples.lenses(uri(MLP))}
    gelu = line_of(MLP, "F.gelu(h)")
    assert "fw" in lenses[gelu] and "bw" in lenses[gelu] and "fused with L" in lenses[gelu]
    assert "extern call" in lenses[line_of(MLP, "self.fc1(x)")]
    # the memory the line holds (docs/memory.md): fc1's addmm output, saved for the backward
    assert lenses[line_of(MLP, "self.fc1(x)")].endswith("saves 8.0 KiB for backward · 32.5 KiB live at peak")
    target = next(t for t in await examples.definition(MLP, gelu) if "/kernels/" in t.uri)
    kernel_lenses = await examples.lenses(target.uri)
    assert len(kernel_lenses) == 1 and f"mlp.py:{gelu + 1}" in kernel_lenses[0].command.title.replace(" ", "")


@pytest.mark.slow
async def test_run_overview_draws_the_memory_picture(examples, example_store):
    overview = _plain(await examples.request("kernelscope/runOverview", {"runId": example_store[1]["mlp"]}))
    drawn = overview["memorySvg"]
    assert drawn.startswith('<svg class="memory"') and drawn.count('<g class="mrow">') == 2  # forward, backward
    peak = re.search(r'<g class="mpeak clickable" data-uri="(file://\S+/0_0_0-backward/wrapper\.py)" '
                     r'data-line="(\d+)"', drawn)
    assert peak is not None, drawn
    with StoreBackend(example_store[0]) as store:
        backward = next(g for g in store.run(example_store[1]["mlp"]).memory().graphs if g.kind == "backward")
    assert int(peak.group(2)) == backward.peak_line - 1
    overview = _plain(await examples.request("kernelscope/runOverview", {"runId": example_store[1]["graph_break"]}))
    assert overview["memorySvg"].startswith('<svg class="memory"')  # inference graphs have a timeline too


@pytest.mark.slow
async def test_graph_breaks_are_diagnostics_with_a_quick_fix(examples):
    examples.open(GRAPH_BREAK)
    found = await examples.wait_for_diagnostics(GRAPH_BREAK, lambda d: len(d) >= 2)
    breaks = {d.range.start.line: d for d in found if d.code == "graph-break"}
    print_line, branch_line = line_of(GRAPH_BREAK, "print("), line_of(GRAPH_BREAK, "if h.mean()")
    assert set(breaks) == {print_line, branch_line}
    assert "print" in breaks[print_line].message and "branching" in breaks[branch_line].message.lower()
    actions = await examples.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(GRAPH_BREAK)), range=breaks[print_line].range,
        context=types.CodeActionContext(diagnostics=[breaks[print_line]])))
    assert actions and "reorderable_logging_functions" in actions[0].title
    edit = actions[0].edit.changes[uri(GRAPH_BREAK)][0]
    assert "torch._dynamo.config.reorderable_logging_functions.add(print)" in edit.new_text
    assert edit.range.start.line == line_of(GRAPH_BREAK, "from torch import nn") + 1


@pytest.mark.slow
async def test_fallbacks_to_eager_are_diagnostics(recordings, tmp_path):
    model = REPO / "bench" / "models" / "transformer_encoder.py"
    with StoreBackend(tmp_path / "store") as store:
        store.write_run(recordings.get_zoo("transformer_encoder"))
    session = await start_session(REPO, {"store": str(tmp_path / "store")})
    try:
        session.open(model)
        found = await session.wait_for_diagnostics(model, lambda d: any(x.code == "fallback" for x in d))
        (fallback,) = [d for d in found if d.code == "fallback"]
        assert fallback.range.start.line == line_of(model, "self.encoder(x)")
        assert "_transformer_encoder_layer_fwd" in fallback.message and "(2 calls)" in fallback.message
    finally:
        await session.stop()


@pytest.mark.slow
async def test_custom_requests_of_the_vscode_contract(examples, example_store):
    gelu = line_of(MLP, "F.gelu(h)")
    position = {"textDocument": {"uri": uri(MLP)}, "position": {"line": gelu, "character": 0}}
    linked = _plain(await examples.request("kernelscope/linkedRanges", position))
    assert linked["origin"]["start"]["line"] == gelu
    roles = {link["role"] for link in linked["links"]}
    assert {"pre_grad", "post_grad", "kernel", "wrapper"} <= roles
    assert all(link["uri"] != uri(MLP) for link in linked["links"])
    kernels = _plain(await examples.request("kernelscope/kernelsForLine", position))["kernels"]
    assert {"0/0 forward", "0/0 backward"} <= {k["graph"] for k in kernels}
    generated = [k for k in kernels if k["kind"] == "triton"]
    assert all(k["uri"].startswith("file://") and k["range"] is not None for k in generated)
    kernel_position = {"textDocument": {"uri": generated[0]["uri"]}, "position": generated[0]["range"]["start"]}
    sources = _plain(await examples.request("kernelscope/sourceForLine", kernel_position))["sources"]
    assert any(s["uri"] == uri(MLP) and s["range"]["start"]["line"] == gelu for s in sources)
    overview = _plain(await examples.request("kernelscope/runOverview", {"runId": example_store[1]["mlp"]}))
    assert overview["run"]["mode"] == "train" and len(overview["graphs"]) == 2
    assert overview["kernels"][0]["sourceLines"]
    # the fusion picture comes drawn (kernelscope/render/fusion.py); a click on a node opens its file and line
    drawn = overview["fusionSvg"]
    assert drawn.startswith('<svg class="fusion"') and '<path class="fedge"' in drawn and "style=" not in drawn
    assert f'data-uri="{uri(MLP)}" data-line="{gelu}"' in drawn
    breaks = _plain(await examples.request("kernelscope/runOverview", {}))["graphBreaks"]
    assert {b["line"] for b in breaks} == {line_of(GRAPH_BREAK, "print("), line_of(GRAPH_BREAK, "if h.mean()")}
    runs = _plain(await examples.command("kernelscope.runs"))["runs"]
    assert [r["id"] for r in runs if r["selected"]] == [example_store[1]["graph_break"]]
    assert _plain(await examples.command("kernelscope.selectRun", example_store[1]["mlp"])) == {
        "runId": example_store[1]["mlp"]}
    runs = _plain(await examples.command("kernelscope.runs"))["runs"]
    assert [r["id"] for r in runs if r["selected"]] == [example_store[1]["mlp"]]


@pytest.mark.slow
async def test_generated_files_links_highlights_and_symbols(examples, example_store):
    with StoreBackend(example_store[0]) as store:
        details = store.show(example_store[1]["mlp"])
    wrapper = example_store[0] / details.graphs[0].files["wrapper"]
    links = await examples.client.text_document_document_link_async(types.DocumentLinkParams(
        text_document=types.TextDocumentIdentifier(uri=uri(wrapper))))
    targets = {link.target.split("#")[0] for link in links}
    assert any("/kernels/triton_" in target for target in targets)
    post_grad = example_store[0] / details.graphs[0].files["post_grad"]
    graph_links = await examples.client.text_document_document_link_async(types.DocumentLinkParams(
        text_document=types.TextDocumentIdentifier(uri=uri(post_grad))))
    assert any(link.target.startswith(uri(MLP) + "#L") for link in graph_links)
    kernel = next(k for k in details.kernels if k.kind == "triton")
    kernel_file = example_store[0] / kernel.file
    erf = line_of(kernel_file, "libdevice.erf") if "gelu" in kernel.name else line_of(kernel_file, "tl.store")
    highlights = await examples.client.text_document_document_highlight_async(types.DocumentHighlightParams(
        text_document=types.TextDocumentIdentifier(uri=uri(kernel_file)),
        position=types.Position(line=erf, character=0)))
    assert highlights and erf in {h.range.start.line for h in highlights}
    symbols = await examples.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="tanh"))
    assert symbols and all("tanh" in s.name for s in symbols)  # kernels of the shown run (graph_break)
    assert "/kernels/" in symbols[0].location.uri
    await examples.command("kernelscope.selectRun", example_store[1]["mlp"])
    symbols = await examples.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="graph"))
    assert {s.name for s in symbols} == {"graph [0/0] forward", "graph [0/0] backward"}


async def test_opening_and_hovering_never_runs_workspace_code(synthetic):
    marker = synthetic / "ran.txt"
    model = synthetic / "model.py"
    model.write_text(f"open({str(marker)!r}, 'w').write('imported')\n\n\ndef make():\n"
                     f"    open({str(marker)!r}, 'w').write('called')\n")
    session = await start_session(synthetic, {})
    try:
        session.open(model)
        session.open(synthetic / "examples" / "mlp.py")
        await session.hover(model, 4)
        await session.lenses(uri(model))
        await session.hover(synthetic / "examples" / "mlp.py", line_of(synthetic / "examples" / "mlp.py", "gelu(h)"))
        await asyncio.sleep(1.0)  # the store poll and background indexing have run
        assert not marker.exists()
        children = Path(f"/proc/{session.client._server.pid}/task")
        assert children.exists()  # the server is alive and started no engine worker:
        assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_worker_of(p, session)]
    finally:
        await session.stop()


def _is_worker_of(proc: Path, session) -> bool:
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == session.client._server.pid and b"engine.worker" in cmdline


async def test_configuration_changes_apply(synthetic):
    session = await start_session(synthetic, {})
    try:
        source = synthetic / "examples" / "mlp.py"
        session.open(source)
        params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri=uri(source)),
                                       range=types.Range(start=types.Position(line=0, character=0),
                                                         end=types.Position(line=60, character=0)))
        hints = await session.client.text_document_inlay_hint_async(params)
        assert any("gelu" in hint.label for hint in hints)
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"kernelscope": {"inlayHints": False}}))
        assert not await session.client.text_document_inlay_hint_async(params)
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"kernelscope": {"store": "elsewhere"}}))
        assert await session.hover(source, line_of(source, "gelu(h)")) is None  # no store there
    finally:
        await session.stop()


async def test_a_store_that_cannot_be_read_is_reported(tmp_path):
    (tmp_path / ".kernelscope").mkdir()
    (tmp_path / ".kernelscope" / "kernelscope.sqlite").write_bytes(b"not a database at all" * 100)
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    session = await start_session(tmp_path, {})
    try:
        status = await session.wait_for_status(lambda s: s["state"] == "failed", timeout=10)
        assert "kernelscope.sqlite" in status["message"]
        assert any("kernelscope.sqlite" in message.message for message in session.client.messages)
        session.open(model)
        hover = await session.hover(model, 0)
        assert hover is not None and "not a readable SQLite database" in hover.contents.value
    finally:
        await session.stop()


@pytest.mark.slow
async def test_a_user_triton_kernel_line_goes_to_its_generated_copy(user_triton_store):
    """examples/user_triton_kernel.py's autotuned kernel: definition from the user's kernel line
    lands on the line Inductor copied it to; hovers on both sides show the config launched."""
    root, runs = user_triton_store
    example = EXAMPLES / "user_triton_kernel.py"
    lines = example.read_text().splitlines()
    kernel_def = line_of(example, "def silu_forward_kernel(")
    load = next(number for number in range(kernel_def, len(lines)) if "x = tl.load(x_ptr" in lines[number])
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(example)
        targets = await session.definition(example, load)
        assert targets and all("/kernels/silu_forward_kernel" in target.uri for target in targets)
        for target in targets:
            copied = Path(target.uri.removeprefix("file://")).read_text().splitlines()[target.range.start.line]
            assert copied.strip() == lines[load].strip()
        hover = (await session.hover(example, load)).contents.value
        assert "user Triton kernel" in hover and "launched with: BLOCK=256, num_warps=4, num_stages=3" in hover
        assert re.search(r"\(file://\S+/kernels/silu_forward_kernel\.py#L\d+\)", hover)  # a link to the copy
        copy = Path(targets[0].uri.removeprefix("file://"))
        session.open(copy)
        copy_hover = (await session.hover(copy, targets[0].range.start.line)).contents.value
        assert f"user_triton_kernel.py#L{load + 1}" in copy_hover and "@triton.autotune configs (2)" in copy_hover
        references = await session.references(targets[0].uri, targets[0].range.start.line)
        assert (uri(example), load) in {(ref.uri, ref.range.start.line) for ref in references}  # the user's line
    finally:
        await session.stop()


@pytest.mark.slow
async def test_user_triton_kernel_lenses_name_the_compiled_copy_and_its_config(user_triton_store):
    """Over the user's `@triton.jit` kernel: its compiled copies and the autotune config the run
    launched; over the line that launches it: the same, said as a launch."""
    root, _ = user_triton_store
    example = EXAMPLES / "user_triton_kernel.py"
    kernel_def = line_of(example, "def silu_forward_kernel(")
    launch = line_of(example, "silu_forward_kernel[lambda meta")
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(example)  # the latest run with the file: the inference run
        titles: dict[int, list[str]] = {}
        for lens in await session.lenses(uri(example)):
            titles.setdefault(lens.range.start.line, []).append(lens.command.title)
        copy = (r"compiled copy in silu_forward_kernel\w* \(0/0 inference\) "
                r"· config BLOCK=256, num_warps=4, num_stages=3")
        assert any(re.fullmatch(copy, title) for title in titles.get(kernel_def, [])), titles.get(kernel_def)
        assert any(re.fullmatch("launches user Triton kernel silu_forward_kernel: " + copy, title)
                   for title in titles.get(launch, [])), titles.get(launch)
    finally:
        await session.stop()


@pytest.mark.slow
async def test_foreach_sub_kernel_hovers_name_the_parameters_they_update(recordings, tmp_path):
    """examples/sgd_step.py's compiled SGD step: the hover on the script's `step()` line lists
    the foreach sub-kernels with the parameter each updates, by group; the hover on a line of
    a sub-kernel's block names that sub-kernel, its parameter and the `step()` line."""
    root = tmp_path / ".kernelscope"
    run = recordings.get_script("sgd_step")
    graph, kernel = next((graph, kernel) for graph in run.graphs for kernel in graph.kernels if kernel.parts)
    part = kernel.parts[-1]
    with StoreBackend(root) as store:
        run_id = store.write_run(run)
    example = REPO / "examples" / "sgd_step.py"
    step = line_of(example, "step()  # the compiled")
    kernel_file = root / "runs" / str(run_id) / "graphs" / graph.key / "kernels" / f"{kernel.name}.py"
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(example)
        hover = (await session.hover(example, step)).contents.value
        assert "optimizer parameters this line's foreach kernels update (8 sub-kernels, down)" in hover
        assert "updates param_groups[0]: 0.weight (64, 32)" in hover and "updates param_groups[1]: 2.bias (8)" in hover
        session.open(kernel_file)
        inside = (await session.hover(kernel_file, part.first_line + 1)).contents.value
        (param,) = part.params
        assert "foreach sub-kernel of this line" in inside
        assert f"{kernel.name} sub-kernel {part.index} (lines {part.first_line}-{part.last_line})" in inside
        assert f"updates param_groups[{param.group}]: {param.name} ({', '.join(map(str, param.shape))})" in inside
        assert f"called from `examples/sgd_step.py:{step + 1} main`" in inside
        assert re.search(r"from \[\S*sgd\.py:\d+\]\(file://\S+sgd\.py#L\d+\)", inside)  # the optimizer's line, linked
    finally:
        await session.stop()
