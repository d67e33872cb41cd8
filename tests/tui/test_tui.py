"""The terminal explorer (kernelscope/tui/): Pilot tests that move the cursor and check
the linked lines in the other panes, on real recordings of the examples (slow) and on
a synthetic run (fast); the import boundary; the CLI's errors."""
from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, example_line
from synthetic_runs import GELU_LINE, make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)
from tui_support import SIZE, links_for, settle, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.kernel_list import KernelList
from kernelscope.tui.key_footer import KeyFooter
from kernelscope.tui.linking import link_set
from kernelscope.tui.module_filter import ModuleFilterScreen
from kernelscope.tui.run_data import KernelFilter, KernelRow, sort_key

MLP = "examples/mlp.py"
GRAPH_BREAK = "examples/graph_break.py"


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_store(recordings, tmp_path_factory) -> Path:
    """A store holding real recordings: run 1 = examples/mlp.py (inference), run 2 =
    examples/graph_break.py (train: 5 graphs, 2 graph breaks)."""
    root = tmp_path_factory.mktemp("tui") / ".kernelscope"
    with StoreBackend(root) as store:
        assert store.write_run(recordings.get("mlp")) == 1
        assert store.write_run(recordings.get("graph_break", train=True)) == 2
    return root


def linked_text(app, role: str) -> list[str]:
    view = app.view(role)
    return [view.lines[line - 1] for line in sorted(view.linked)]


def line_of(view, needle: str) -> int:
    for number, text in enumerate(view.lines, 1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {view.path}")


# -- real recordings: the linked highlights ----------------------------------------------------


@pytest.mark.slow
def test_source_line_highlights_its_graph_kernel_and_wrapper_lines(real_store):
    gelu = example_line("mlp", "h = F.gelu(h)")

    async def scenario():
        app = KernelscopeApp(real_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.view("source").path == MLP
            await links_for(pilot, app, "source", gelu)
            post = linked_text(app, "post_grad")
            assert any("aten.erf" in text for text in post), post
            assert not any("aten.mm" in text for text in post), "fc1's matmul is not on the GELU line"
            kernel = app.view("kernel")
            assert kernel.path.endswith("triton_per_fused_addmm_gelu_native_layer_norm_0.py")
            assert any("libdevice.erf" in text for text in linked_text(app, "kernel"))
            wrapper_lines = linked_text(app, "wrapper")
            assert any("triton_per_fused_addmm_gelu_native_layer_norm_0.run(" in text for text in wrapper_lines)
            # The launch line is scrolled into view in the wrapper pane.
            launch = line_of(app.view("wrapper"), "triton_per_fused_addmm_gelu_native_layer_norm_0.run(")
            top = app.view("wrapper").scroll_offset.y
            assert top < launch <= top + app.view("wrapper").scrollable_content_region.height
            assert "erf" in str(app.query_one("#chain").render())
            # Moving on to the softmax line changes every pane.
            await links_for(pilot, app, "source", example_line("mlp", "torch.softmax"))
            assert "softmax" in app.view("kernel").path
            assert not any("libdevice.erf" in text for text in linked_text(app, "kernel"))

    asyncio.run(scenario())


@pytest.mark.slow
def test_kernel_and_wrapper_lines_highlight_the_model_line(real_store):
    gelu = example_line("mlp", "h = F.gelu(h)")

    async def scenario():
        app = KernelscopeApp(real_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await links_for(pilot, app, "source", gelu)
            kernel = app.view("kernel")
            await links_for(pilot, app, "kernel", line_of(kernel, "libdevice.erf"))
            assert app.view("source").linked == {gelu}
            assert any("aten.erf" in text for text in linked_text(app, "post_grad"))
            wrapper = app.view("wrapper")
            await links_for(pilot, app, "wrapper",
                            line_of(wrapper, "triton_per_fused_addmm_gelu_native_layer_norm_0.run("))
            assert app.view("kernel").path.endswith("triton_per_fused_addmm_gelu_native_layer_norm_0.py")
            assert gelu in app.view("source").linked
            post = app.view("post_grad")
            await links_for(pilot, app, "post_grad", line_of(post, "aten.erf"))
            assert app.view("source").linked == {gelu}
            assert any("libdevice.erf" in text for text in linked_text(app, "kernel"))

    asyncio.run(scenario())


@pytest.mark.slow
def test_keys_move_the_cursor_enter_follows_and_u_returns(real_store):
    gelu = example_line("mlp", "h = F.gelu(h)")

    async def scenario():
        app = KernelscopeApp(real_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await links_for(pilot, app, "source", gelu - 1)
            generation = app.link_generation
            await pilot.press("down")  # keyboard: onto the GELU line
            await settle(pilot, lambda: app.link_generation > generation and app.last_query == ("source", gelu))
            assert any("aten.erf" in text for text in linked_text(app, "post_grad"))
            await pilot.press("enter")  # down the chain: post-grad
            await settle(pilot, lambda: app.last_query is not None and app.last_query[0] == "post_grad")
            assert app.focused is app.view("post_grad")
            assert app.view("source").linked == {gelu}
            await pilot.press("enter")  # post-grad -> kernel
            await settle(pilot, lambda: app.last_query is not None and app.last_query[0] == "kernel")
            assert app.focused is app.view("kernel")
            await pilot.press("u")  # back up to the model line
            await settle(pilot, lambda: app.last_query is not None and app.last_query[0] == "source")
            assert app.focused is app.view("source")
            assert app.view("source").cursor_line == gelu
            await pilot.press("4")
            assert app.focused is app.view("wrapper")

    asyncio.run(scenario())


@pytest.mark.slow
def test_mouse_click_moves_the_cursor(real_store):
    async def scenario():
        app = KernelscopeApp(real_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            view = app.view("source")
            target = view.scroll_offset.y + 2 + 1  # the third visible row
            generation = app.link_generation
            await pilot.click(view, offset=(10, 2))
            await settle(pilot, lambda: app.link_generation > generation)
            assert view.cursor_line == target
            assert app.focused is view

    asyncio.run(scenario())


@pytest.mark.slow
def test_kernel_list_sorts_filters_and_opens(real_store):
    async def scenario():
        app = KernelscopeApp(real_store, run_id=2)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            kernels = app.query_one(KernelList)
            await settle(pilot, lambda: app.facts_loaded)
            assert len(kernels.shown_rows) == 11
            assert all(row.source_lines is not None for row in kernels.rows)
            await pilot.press("5", "slash")
            await pilot.press(*"kind:triton bw")
            assert {row.kind for row in kernels.shown_rows} == {"triton"}
            assert {row.phase for row in kernels.shown_rows} == {"bw"}
            assert len(kernels.shown_rows) == 2
            await pilot.press("enter")  # to the table
            kernels.sort_column = "lines"
            kernels.refresh_rows()
            counts = [row.line_count for row in kernels.shown_rows]
            assert counts == sorted(counts, reverse=True)
            chosen = kernels.shown_rows[kernels.table.cursor_row]  # the re-sort kept the cursor's kernel
            await pilot.press("enter")
            await settle(pilot, lambda: app.view("kernel").path == chosen.file
                         and app.last_query is not None and app.last_query[0] == "kernel")
            assert app.focused is app.view("kernel")
            assert app.view("source").linked, "the opened kernel line reaches a model line"
            assert "backward" in app.view("post_grad").path

    asyncio.run(scenario())


@pytest.mark.slow
def test_graph_breaks_are_listed_and_jump_to_the_line(real_store):
    print_line = example_line("graph_break", 'print("kernelscope example')
    branch_line = example_line("graph_break", "if h.mean() > 0")

    async def scenario():
        app = KernelscopeApp(real_store, run_id=2)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("b")
            await settle(pilot, lambda: type(app.screen).__name__ == "BreaksScreen")
            prompts = [str(option.prompt) for option in app.screen.query_one("OptionList").options]
            assert any(f"{GRAPH_BREAK}:{print_line}" in prompt and "print" in prompt for prompt in prompts)
            assert any(f"{GRAPH_BREAK}:{branch_line}" in prompt and "branching" in prompt for prompt in prompts)
            await pilot.press("down", "enter")  # the data-dependent branch
            await settle(pilot, lambda: app.last_query == ("source", branch_line))
            assert app.view("source").cursor_line == branch_line
            assert any("aten.mean" in text for text in linked_text(app, "post_grad"))

    asyncio.run(scenario())


@pytest.mark.slow
def test_run_picker_switches_runs_and_compares_two(real_store):
    async def scenario():
        app = KernelscopeApp(real_store)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.run_id == 2  # the latest
            await pilot.press("r")
            await settle(pilot, lambda: type(app.screen).__name__ == "RunPicker")
            await pilot.press("c", "down", "c")  # mark run 2, then compare with run 1
            await settle(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
            report = app.screen.report
            assert report.startswith("kernelscope diff: run 1 -> run 2")
            assert "triton_per_fused_addmm_gelu_native_layer_norm_0" in report
            await pilot.press("escape", "r")
            await settle(pilot, lambda: type(app.screen).__name__ == "RunPicker")
            await pilot.press("down", "enter")
            await settle(pilot, lambda: app.run_id == 1 and app.last_query is not None
                         and app.view("kernel").path is not None and "runs/1/" in app.view("kernel").path)
            assert app.view("source").path == MLP

    asyncio.run(scenario())


@pytest.mark.slow
def test_module_filter_narrows_the_linked_lines(real_store):
    fc1 = example_line("mlp", "h = self.fc1(x)")
    with StoreBackend(real_store, create=False) as store:
        result = store.query(MLP, fc1, 1)
    modules = {node.module for chain in result.graphs for node in chain.post_nodes}
    assert "fc1" in modules
    shown = {"source": MLP, "post_grad": None, "kernel": None, "wrapper": None}
    kept = link_set(result, "source", shown, module="fc1")
    assert kept.panes["post_grad"].lines
    other = link_set(result, "source", shown, module="fc2")
    assert other.empty and "no links in module fc2" in other.summary

    async def scenario():
        app = KernelscopeApp(real_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await settle(pilot, lambda: app.facts_loaded)
            await pilot.press("m")
            await settle(pilot, lambda: isinstance(app.screen, ModuleFilterScreen))
            assert {"fc1", "fc2", "norm"} <= set(app.modules)
            await pilot.press(*"fc2", "enter")  # a typed instance path is chosen at once
            await settle(pilot, lambda: app.module == "fc2")
            await links_for(pilot, app, "source", fc1)
            assert not app.view("post_grad").linked
            kernels = app.query_one(KernelList).shown_rows
            assert kernels and all(any(m.startswith("fc2") for m in row.modules) for row in kernels)

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_missing_run_is_a_visible_error(real_store):
    async def scenario():
        app = KernelscopeApp(real_store, run_id=99)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: bool(app.status.error))
            assert "there is no run 99" in app.status.error

    asyncio.run(scenario())


# -- fast: a synthetic run, the kernel filter, the boundary, the CLI ----------------------------


def test_synthetic_run_links_source_to_kernel(mlp_store):
    async def scenario():
        app = KernelscopeApp(mlp_store.root)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await links_for(pilot, app, "source", GELU_LINE)
            assert app.view("kernel").path.endswith("triton_poi_fused_gelu_0.py")
            assert app.view("kernel").linked
            assert app.view("wrapper").linked

    asyncio.run(scenario())


def test_moving_between_code_panes_keeps_the_footer_and_the_kernel_list_changes_it(mlp_store):
    """The code panes share their keys: the footer's key widgets stay (rebuilding them laid
    out the whole screen on every pane switch); the kernel list has other keys."""

    async def scenario():
        app = KernelscopeApp(mlp_store.root)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            footer = app.query_one(KeyFooter)
            keys = list(footer.children)
            assert any("follow link" in str(key.render()) for key in keys)
            for pane in "2341":
                await pilot.press(pane)
                await pilot.pause()
                assert list(footer.children) == keys
            await pilot.press("5")
            await settle(pilot, lambda: list(footer.children) != keys)
            assert not any("follow link" in str(key.render()) for key in footer.children)

    asyncio.run(scenario())


def test_the_run_is_frozen_out_of_the_collector_while_shown_and_released_on_exit(mlp_store):
    async def scenario():
        app = KernelscopeApp(mlp_store.root)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.facts_loaded)
            # a list made when the facts arrived: frozen, so in none of the collector's generations
            made_then = next(row.source_lines for row in app.query_one(KernelList).rows if row.source_lines)
            assert not any(tracked is made_then for tracked in gc.get_objects())
        assert gc.get_freeze_count() == 0

    asyncio.run(scenario())


def _row(name, kind="triton", phase="fw", lines=10, sources=None, modules=()):
    return KernelRow(graph=f"0_0_0-{phase}", compile_id="0/0", name=name, kind=kind, phase=phase, file=None,
                     line_count=lines, nodes=[], source_lines=sources, modules=set(modules))


def test_kernel_filter_words_kind_phase_and_module():
    rows = [_row("triton_poi_fused_gelu_0", modules=["blocks.0.mlp.fc1"]),
            _row("triton_per_fused_softmax_1", phase="bw", lines=40, modules=["blocks.1.attn"]),
            _row("extern_kernels.mm#0", kind="extern", lines=None)]
    keep = lambda **kw: [row.name for row in rows if KernelFilter(**kw).keeps(row)]  # noqa: E731
    assert keep(text="gelu") == ["triton_poi_fused_gelu_0"]
    assert keep(text="fused bw") == ["triton_per_fused_softmax_1"]
    assert keep(text="kind:extern") == ["extern_kernels.mm#0"]
    assert keep(module="blocks.0") == ["triton_poi_fused_gelu_0"]
    assert keep(module="blocks.1.attn") == ["triton_per_fused_softmax_1"]
    assert keep(module="blocks.1.at") == []  # a module path, not a prefix of a name
    by_lines = sorted(rows, key=sort_key("lines"))
    assert [row.line_count for row in by_lines] == [40, 10, None]


def test_tui_never_imports_torch():
    code = ("import sys\n"
            "from kernelscope.cli import main\n"
            "import kernelscope.cli.tui_cmd, kernelscope.tui.app\n"
            "from kernelscope.tui.app import KernelscopeApp\n"
            "KernelscopeApp('.kernelscope')\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'kernelscope.engine'))))\n"
            "import kernelscope.tui.linking, kernelscope.tui.run_data, kernelscope.tui.gateway\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    headless = ("import sys\n"
                "import kernelscope.tui.linking, kernelscope.tui.run_data, kernelscope.tui.gateway, "
                "kernelscope.tui.compile_driver\n"
                "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch')))\n")
    out = subprocess.run([sys.executable, "-c", headless], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_cli_errors_before_the_screen_opens(run_cli, tmp_path):
    missing = run_cli(["tui", "--store", str(tmp_path / "nowhere")])
    assert missing.returncode == 5
    assert "no kernelscope store" in missing.stderr
    watch = run_cli(["tui", "--watch"])
    assert watch.returncode == 2
    assert "--watch needs a target" in watch.stderr
    bad = run_cli(["tui", "examples/nope.py:make", "--store", str(tmp_path / "s")])
    assert bad.returncode == 3
    assert "examples/nope.py: no such file" in bad.stderr
    help_text = run_cli(["tui", "--help"]).stdout
    assert help_text.rstrip().splitlines()[-1].strip().startswith("kernelscope tui")
