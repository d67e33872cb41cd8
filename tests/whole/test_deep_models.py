"""Deep models read well: module instances of one line with links of the same shape
fold into one group in every front end (the CLI summary, hovers and code lenses, the
TUI's module list), the line overviews the store keeps agree with its full query,
and a folded group opens on demand (`--module`, the TUI list, "N more" in a hover).

The fast tests fold synthetic summaries; the slow ones read a real 12-block nanoGPT
run (tests/deep_model.py), recorded once per session."""
from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3

import pytest
from conftest import REPO
from deep_model import GELU_LINE, LOOP_LINE, NANOGPT, deep_store

from kernelscope.store import ModuleSummary
from kernelscope.store.reading.folding import fold_modules, instances_label

# -- folding (synthetic) ------------------------------------------------------------------------


def _summary(module, triton=("triton_poi_fused_gelu_3",), externs=("extern_kernels.mm#0",), lines=40, nodes=12,
             module_class="nanogpt.Block", via="call", sources=("m.py:3",)):
    return ModuleSummary(module=module, module_class=module_class, via=via, post_nodes=nodes,
                         triton_kernels=list(triton), extern_calls=list(externs), generated_lines=lines,
                         source_lines=list(sources))


def test_alike_instances_fold_and_others_stay_apart():
    modules = [_summary("blocks.0", triton=("triton_per_fused_embedding_0", "triton_poi_fused_gelu_3"))]
    modules += [_summary(f"blocks.{n}", externs=(f"extern_kernels.mm#{n}",)) for n in range(1, 11)]
    modules += [_summary("blocks.11", lines=41)]
    groups = fold_modules(modules)
    assert [group.label for group in groups] == ["blocks.0", "blocks.1–10", "blocks.11"]
    alike = groups[1]
    assert alike.folded and alike.members == [f"blocks.{n}" for n in range(1, 11)]
    assert (alike.triton_kernels, alike.extern_ops, alike.generated_lines) == (
        ["triton_poi_fused_gelu_3"], ["extern_kernels.mm"], 40)
    assert alike.extern_calls == ["extern_kernels.mm#1"]  # the first member's own calls
    assert not groups[0].folded and not groups[2].folded


def test_folding_ignores_order_and_needs_the_same_shape():
    # A backward graph visits the layers in its own order, and lists kernels in its own order.
    modules = [_summary("blocks.3", triton=("b", "a")), _summary("blocks.1", triton=("a", "b")),
               _summary("blocks.2", triton=("a", "b"))]
    assert [group.label for group in fold_modules(modules)] == ["blocks.1–3"]
    for different in (dict(nodes=13), dict(via="direct"), dict(module_class="nanogpt.MLP"),
                      dict(externs=("extern_kernels.addmm#9",)), dict(sources=("m.py:4",)), dict(triton=("c",))):
        groups = fold_modules([_summary("blocks.1"), _summary("blocks.2", **different)])
        assert len(groups) == 2, different
    # Instances of different parents never fold; the top level stays a group of its own.
    assert len(fold_modules([_summary("enc.layers.0"), _summary("dec.layers.0")])) == 2
    assert [group.label for group in fold_modules([_summary(""), _summary("head")])] == ["", "head"]


def test_labels_name_the_members():
    assert instances_label(["blocks.2"]) == "blocks.2"
    assert instances_label([f"blocks.{n}" for n in (1, 2, 3, 5, 6, 9)]) == "blocks.1–3, 5–6, 9"
    assert instances_label([f"h.{n}" for n in range(0, 20, 2)]) == "h.0, 2, 4, 6, …"
    assert instances_label(["0", "1", "2"]) == "0–2"
    assert instances_label(["encoder", "decoder"]) == "encoder +1"


# -- a real deep model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deep(recordings, tmp_path_factory):
    store = deep_store(recordings, tmp_path_factory.mktemp("deep") / "store")
    yield store
    store.close()


def _counted(chain) -> tuple:
    externs = sum(1 for kernel in chain.kernels if kernel.kind == "extern")
    return (chain.graph.key, len(chain.pre_nodes), len(chain.post_nodes),
            sum(1 for node in chain.post_nodes if node.via == "call"), len(chain.kernels) - externs, externs,
            chain.generated_lines, chain.modules, chain.groups)


def _overview_counts(graph) -> tuple:
    return (graph.graph.key, graph.pre_nodes, graph.post_nodes, graph.called_nodes, graph.triton_kernels,
            graph.extern_calls, graph.generated_lines, graph.modules, graph.groups)


@pytest.mark.slow
def test_line_overviews_agree_with_the_query_on_every_line(deep, tmp_path):
    """What `kernelscope query` prints by default (the overviews the writer kept) is what the
    store's full query counts, line by line: per graph, per module instance and per folded
    group; and a store written before overviews existed counts them on first read, the same."""
    run = deep.run()
    lines = run.linked_lines(NANOGPT)
    assert LOOP_LINE in lines and GELU_LINE in lines
    for line in range(1, len((REPO / NANOGPT).read_text().splitlines()) + 1):
        query = deep.query(NANOGPT, line, detail=False, rollup=True) if line in lines else None
        overview = run.line_overview(NANOGPT, line)
        assert [_overview_counts(graph) for graph in overview.graphs] == \
               ([_counted(chain) for chain in query.graphs] if query else []), line
        assert overview.empty == (query is None or query.empty), line
    loop = run.line_overview(NANOGPT, LOOP_LINE)
    assert loop.text.strip() == "x = block(x)"
    assert any(group.folded for graph in loop.graphs for group in graph.groups)

    shutil.copytree(deep.root, tmp_path / "old")
    conn = sqlite3.connect(tmp_path / "old" / "kernelscope.sqlite")
    conn.execute("DROP TABLE line_overviews")  # as a store written before line overviews
    conn.commit()
    conn.close()
    from kernelscope.store import StoreBackend

    with StoreBackend(tmp_path / "old", create=False) as old:
        assert [_overview_counts(g) for g in old.run().line_overview(NANOGPT, LOOP_LINE).graphs] == \
               [_overview_counts(g) for g in loop.graphs]
        assert old.run().linked_lines(NANOGPT) == lines
    with StoreBackend(tmp_path / "old", create=False) as again:  # counted once, then kept
        assert again.run().linked_lines(NANOGPT) == lines
    kept = sqlite3.connect(tmp_path / "old" / "kernelscope.sqlite")
    assert kept.execute("SELECT COUNT(*) FROM line_overviews WHERE line = ?", (LOOP_LINE,)).fetchone()[0] == 1
    kept.close()


@pytest.mark.slow
def test_cli_folds_alike_blocks_and_opens_one(deep, run_cli):
    store = str(deep.root)
    summary = run_cli(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store])
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert len(lines) <= 40, summary.stdout
    folded = [line.strip() for line in lines if "× Block)" in line]
    assert folded and folded[0].startswith("blocks.1–10 (10 × Block)  call: ") and \
        folded[0].endswith(" each; same kernels"), summary.stdout
    assert any(line.strip().startswith("blocks.0 (Block)  call:") for line in lines)
    assert any(line.strip().startswith("extern (each): extern_kernels.") for line in lines)
    assert "e.g. --module blocks." in lines[-1]
    # Without folding the same answer would list every block: the summary counts them all.
    instances = sum(len(group.members) for graph in deep.run().line_overview(NANOGPT, LOOP_LINE).graphs
                    for group in graph.groups)
    assert instances > len(folded) + 4

    member = run_cli(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store, "--module", "blocks.5"])
    assert member.returncode == 0, member.stderr
    assert "blocks.5.attn (CausalSelfAttention)" in member.stdout and "blocks.4" not in member.stdout

    answer = json.loads(run_cli(["query", f"{NANOGPT}:{LOOP_LINE}", "--store", store, "--json"]).stdout)
    forward = answer["graphs"][0]
    group = next(group for group in forward["groups"] if group["label"] == "blocks.1–10")
    assert group["members"] == [f"blocks.{n}" for n in range(1, 11)]
    assert {module["module"] for module in forward["modules"]} >= {"blocks.5.attn.qkv", "blocks.5.mlp.fc"}


@pytest.mark.slow
async def test_hover_and_code_lens_fold_alike_blocks(deep):
    from lsp_support import start_session, uri

    session = await start_session(REPO, {"store": str(deep.root)})
    try:
        model = REPO / NANOGPT
        session.open(model)
        text = (await session.hover(model, LOOP_LINE - 1)).contents.value
        assert "`blocks.1–10` (10 × Block, same kernels)" in text, text
        assert (f"these for `blocks.1`; 9 more alike — open one: "
                f"`kernelscope query {NANOGPT}:{LOOP_LINE} --module blocks.2`") in text
        assert "`blocks.0` (Block)" in text and "`blocks.5`" not in text
        lenses = {lens.range.start.line + 1: lens.command.title for lens in await session.lenses(uri(model))}
        assert lenses[LOOP_LINE].endswith("· 12 × Block: blocks.1–10 alike"), lenses[LOOP_LINE]
        assert "alike" not in lenses[min(lines for lines in lenses if lines > LOOP_LINE)]
    finally:
        await session.stop()


@pytest.mark.slow
def test_tui_module_list_shows_folded_groups(deep):
    from textual.widgets import OptionList

    from kernelscope.tui.app import KernelscopeApp
    from kernelscope.tui.kernel_list import KernelList
    from kernelscope.tui.module_filter import ModuleFilterScreen
    from kernelscope.tui.run_data import in_instance

    async def settle(pilot, condition, timeout=30.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while not condition():
            assert asyncio.get_running_loop().time() < deadline, "the app did not reach the expected state"
            await pilot.pause(0.05)

    async def scenario():
        app = KernelscopeApp(deep.root)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, lambda: app.facts_loaded)
            await pilot.press("m")
            await settle(pilot, lambda: isinstance(app.screen, ModuleFilterScreen))
            screen = app.screen
            options = screen.query_one(OptionList)
            rows = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            folded = [row for row in rows if "▸" in row]
            assert folded == ["  ▸ blocks.1–10 (10 × Block) · 10 Triton, 14 extern each, same kernels"], rows
            assert "    blocks.0 (Block)" in rows and "      blocks.0.attn (CausalSelfAttention)" in rows
            assert not any(row.strip() == "blocks.5" for row in rows)  # members hidden while folded
            # Right opens the group: its members follow it; enter on the group keeps them all.
            options.focus()
            options.highlighted = rows.index(folded[0])
            await pilot.press("right")
            opened = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            assert "▾ blocks.1–10" in opened[rows.index(folded[0])]
            assert [row.strip() for row in opened[rows.index(folded[0]) + 1:][:10]] == \
                   [f"blocks.{n}" for n in range(1, 11)]
            await pilot.press("left")
            assert options.option_count == len(rows)
            await pilot.press("enter")
            await settle(pilot, lambda: app.module == "blocks.1–10")
            assert app.module_paths == tuple(f"blocks.{n}" for n in range(1, 11))
            kernels = app.query_one(KernelList)
            assert kernels.shown_rows and len(kernels.shown_rows) < len(kernels.rows)
            assert all(any(in_instance(module, member) for module in row.modules for member in app.module_paths)
                       for row in kernels.shown_rows)

    asyncio.run(scenario())
