"""The code view's drawing (kernelscope/tui/panes/): rows drawn from the file's row cache
carry the right text and backgrounds through cursor moves, highlights, focus changes,
horizontal scrolls and file switches; a new file resizes the view's scrollbars in place.
Fast: a one-view app, no recording."""
from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Input

import kernelscope.tui.app as tui_app
from kernelscope.tui.panes.code_view import CodeView
from kernelscope.tui.panes.shown_file import RecentFiles

SIZE = (60, 12)


class OneView(App):
    CSS_PATH = Path(tui_app.__file__).with_name(tui_app.KernelscopeApp.CSS_PATH)  # the explorer's styles
    CSS = "CodeView { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield CodeView("source", id="view")
        yield Input(id="elsewhere")


def numbered(count: int, width: int = 0) -> str:
    return "".join(f"value_{number} = {number}" + "#" * width + "\n" for number in range(1, count + 1))


def rows(view: CodeView) -> list:
    return view.render_lines(Region(0, 0, view.size.width, view.size.height))


def background(view: CodeView, row) -> tuple | None:
    """The background behind the row's code: the padding after the line's end."""
    bgcolor = list(row)[-1].style.bgcolor
    return bgcolor.get_truecolor() if bgcolor else None


def component_background(view: CodeView, name: str) -> tuple:
    return view.get_component_rich_style(name).bgcolor.get_truecolor()


def run(scenario) -> None:
    async def main():
        app = OneView()
        async with app.run_test(size=SIZE) as pilot:
            await scenario(app, app.query_one(CodeView), pilot)

    asyncio.run(main())


def test_rows_show_line_numbers_code_the_cursor_and_the_linked_lines():
    async def scenario(app, view, pilot):
        view.load("model.py", numbered(40))
        view.focus()
        view.move_cursor(3)
        view.set_linked([4, 5], focus_line=4)
        await pilot.pause()
        drawn = rows(view)
        top = view.scroll_offset.y
        texts = [row.text for row in drawn]
        assert texts[2 - top].split()[:3] == ["3", "value_3", "="]
        assert background(view, drawn[2 - top]) == component_background(view, "code-view--cursor")
        assert background(view, drawn[3 - top]) == component_background(view, "code-view--linked")
        assert background(view, drawn[4 - top]) == component_background(view, "code-view--linked")
        assert background(view, drawn[5 - top]) != component_background(view, "code-view--linked")
        assert all(row.cell_length == view.size.width for row in drawn)

        view.set_linked([])  # the same rows again, from the cache, without the highlight
        await pilot.pause()
        assert background(view, rows(view)[3 - top]) != component_background(view, "code-view--linked")

    run(scenario)


def test_the_cursor_row_dims_when_the_view_loses_focus():
    async def scenario(app, view, pilot):
        view.load("model.py", numbered(20))
        view.focus()
        view.move_cursor(2)
        await pilot.pause()
        assert background(view, rows(view)[1]) == component_background(view, "code-view--cursor")
        app.query_one(Input).focus()
        await pilot.pause()
        assert background(view, rows(view)[1]) == component_background(view, "code-view--cursor-unfocused")

    run(scenario)


def test_a_sideways_scroll_shows_the_later_columns():
    async def scenario(app, view, pilot):
        long_line = "x = '" + "".join(chr(ord("a") + i % 26) for i in range(200)) + "'"
        view.load("model.py", long_line + "\n" + numbered(3))
        await pilot.pause()
        before = rows(view)[0].text
        view.action_scroll_sideways(12)
        await pilot.pause()
        after = rows(view)[0].text
        gutter = before.index("x = '")  # marker, line number, space
        assert after[:gutter] == before[:gutter]  # the gutter stays
        assert after[gutter:gutter + 20] == long_line[12:32]

    run(scenario)


def test_switching_files_shows_each_and_a_changed_file_is_read_again():
    async def scenario(app, view, pilot):
        view.load("a.py", "alpha = 1\n")
        await pilot.pause()
        view.load("b.py", "beta = 2\n")
        await pilot.pause()
        assert "beta = 2" in rows(view)[0].text
        view.load("a.py", "alpha = 1\n")
        await pilot.pause()
        assert "alpha = 1" in rows(view)[0].text
        view.load("a.py", "alpha = 99\n")  # the same path after a recompile
        await pilot.pause()
        assert "alpha = 99" in rows(view)[0].text

    run(scenario)


def test_a_longer_file_resizes_the_scrollbars_and_scrolls_to_its_end():
    async def scenario(app, view, pilot):
        view.load("short.py", numbered(30))
        await pilot.pause()
        view.load("long.py", numbered(500, width=120))
        await pilot.pause()
        assert view.virtual_size.height == 500
        assert view.vertical_scrollbar.window_virtual_size == 500
        assert view.show_horizontal_scrollbar  # lines wider than the view
        visible = view.scrollable_content_region.height
        assert view.max_scroll_y == 500 - visible
        view.focus()
        view.action_edge(1)
        await pilot.pause()
        assert view.scroll_offset.y == view.max_scroll_y
        assert rows(view)[visible - 1].text.split()[0] == "500"

    run(scenario)


def test_recent_files_keep_their_work_and_forget_changed_or_old_ones():
    recent = RecentFiles(size=2)
    first = recent.open("a.py", "a = 1\n", lex_strings=True)
    first.line_segments(0)
    assert recent.open("a.py", "a = 1\n", lex_strings=True) is first  # lexed lines kept
    assert recent.open("a.py", "a = 2\n", lex_strings=True) is not first  # the text changed
    again = recent.open("a.py", "a = 2\n", lex_strings=True)
    recent.open("b.py", "b = 1\n", lex_strings=True)
    recent.open("c.py", "c = 1\n", lex_strings=True)  # a.py is the oldest of three: dropped
    assert recent.open("a.py", "a = 2\n", lex_strings=True) is not again


def test_a_cpp_file_is_lexed_as_cpp():
    """wrapper.cpp and C++ kernels (docs/aot.md): C++ tokens, and `//` comments, not Python's `#`."""
    recent = RecentFiles()
    text = '#include <torch/csrc/inductor/cpp_wrapper/cpu.h>\n    auto buf2 = std::move(buf0);  // reuse """\n'
    cpp = recent.open("runs/1/graphs/0_0_0-inference/wrapper.cpp", text, lex_strings=True)
    python = recent.open("runs/1/graphs/0_0_0-inference/wrapper.py", text, lex_strings=True)
    assert cpp.language == "cpp" and python.language == "python"
    assert cpp.starts_in_string == [False, False]  # no triple-quoted strings in C++
    keyword = {segment.text: segment.style for segment in cpp.line_segments(1)}["auto"]
    assert keyword != {segment.text: segment.style for segment in python.line_segments(1)}.get("auto")
    # a preprocessor directive and its header, not one Python comment
    assert len(cpp.line_segments(0)) > 1 and len(python.line_segments(0)) == 1


def test_a_theme_change_redraws_the_rows_in_its_colours():
    async def scenario(app, view, pilot):
        view.load("model.py", numbered(10))
        view.set_linked([2])
        await pilot.pause()
        dark = component_background(view, "code-view--linked")
        assert background(view, rows(view)[1]) == dark
        app.theme = "textual-light"
        await pilot.pause()
        light = component_background(view, "code-view--linked")
        assert light != dark
        assert background(view, rows(view)[1]) == light

    run(scenario)
