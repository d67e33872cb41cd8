"""The link follower: a cursor move in one pane lights the linked lines in the others.

One store read per cursor move (`request_links` -> the `query_links` worker):
the answer becomes a `LinkSet` (linking.py), and `show` opens the files it leads
to, lights the linked lines and scrolls them into view, writes the chain line, and
has the PTX/SASS pane follow. Each request has a new generation; an answer for an
older one (the cursor moved on) is dropped, before its store read when it is still
queued (`Stale`), after it otherwise. `enter` and `u` (`follow`) move the focus
along the links on screen. Also here: the source pane's gutter marks (the lines
that have links, read after the first paint), the first linked line of a new run,
and the module filter the queries keep.
"""
from __future__ import annotations

from textual.css.query import NoMatches

from kernelscope.errors import StoreError, UserError
from kernelscope.render.distributed import collective_line
from kernelscope.store.results import KERNEL, POST_GRAD, SOURCE, WRAPPER, RunDetails
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.gateway import Stale
from kernelscope.tui.linking import (
    ASM,
    PANES,
    LinkSet,
    add_kernel_launches,
    asm_link_set,
    launch_lines,
    link_set,
    source_link_set,
)
from kernelscope.tui.messages import LinksReady, MarkersLoaded
from kernelscope.tui.panes.code_view import CodeView
from kernelscope.tui.run_data import KernelRow
from kernelscope.tui.store_reads import collectives_at, memory_at, read_file

# Only what the other panes show: a model line needs what is below it, a kernel line what is
# above it (its launch comes from the run's facts); graph and wrapper lines need both.
QUERY_DIRECTION = {SOURCE: "down", POST_GRAD: "both", KERNEL: "up", WRAPPER: "both"}
# Enter follows the chain down to the first of these panes with linked lines.
FOLLOW_DOWN = {SOURCE: [POST_GRAD, KERNEL, WRAPPER], POST_GRAD: [KERNEL, WRAPPER], KERNEL: [WRAPPER],
               WRAPPER: [KERNEL, POST_GRAD]}


class LinkFollower(Controller):
    def __init__(self, app):
        super().__init__(app)
        self.generation = 0  # of the latest request; answers to older ones are dropped
        self.last_links: LinkSet | None = None
        self.last_query: tuple[str, int] | None = None  # (pane, line) of the links on screen
        self.module = ""  # the module filter's label ("" for all)
        self.module_paths: tuple[str, ...] = ()  # the instances it keeps (a folded group: its members)
        self._awaiting_first_line = False
        self._launches: dict[str, dict[str, list[int]]] = {}  # wrapper -> kernel -> launch lines (links worker)

    # -- a new run ---------------------------------------------------------------------------

    def forget(self) -> None:
        """Another run is going on screen: the links on screen are not its."""
        self.last_links = self.last_query = None

    def start_at(self, line: int, kept: bool) -> None:
        """A new run's source file is on screen with the cursor on `line`. A carried-over line
        (`kept`) is queried now; otherwise the cursor goes to the first linked line once the
        gutter marks are in (they can take a while on a big run: the screen comes first)."""
        self._awaiting_first_line = not kept
        if kept:
            self.request_links(SOURCE, line)

    # -- cursor move -> linked lines ---------------------------------------------------------------

    def cursor_moved(self, message: CodeView.CursorMoved) -> None:
        if message.view.role == SOURCE:
            self._awaiting_first_line = False
        self.request_links(message.view.role, message.line)

    def request_links(self, origin: str, line: int) -> None:
        app = self.app
        view = app.view(origin)
        if view.path is None or app.run_id is None:
            return
        self.generation += 1
        self.query_links(self.generation, origin, view.path, line, app.run_id, app.workspace,
                         self._shown_files(), self.module_paths, app.details, app.kernel_list.rows)

    def requery(self) -> None:
        """Ask again for the focused code pane's cursor line (the source pane's when no code
        pane has the focus): after the module filter changed."""
        focused = self.app.focused if isinstance(self.app.focused, CodeView) else self.app.view(SOURCE)
        self.request_links(focused.role, focused.cursor_line)

    def set_module(self, label: str, paths: tuple[str, ...]) -> None:
        """The module instances the queries keep (`m`); "" and () keep all."""
        self.module, self.module_paths = label, paths

    def _shown_files(self) -> dict[str, str | None]:
        return {role: self.app.view(role).path for role in PANES}

    @thread_worker("links", "query links")
    def query_links(self, generation: int, origin: str, path: str, line: int, run_id: int, workspace: str,
                    shown: dict[str, str | None], module: tuple[str, ...], details: RunDetails | None = None,
                    rows: list[KernelRow] | None = None) -> None:
        gateway = self.app.gateway

        def still_wanted() -> bool:
            return generation == self.generation

        try:
            if origin == ASM:
                answer = gateway.call(lambda store: store.run(run_id).asm_line(path, line, "both"),
                                      still_wanted=still_wanted)
                links = asm_link_set(answer, shown, module, self.module)
            elif origin == SOURCE and not module:  # the file's source index: line numbers, no texts
                answer = gateway.call(lambda store: store.run(run_id).source_line(path, line),
                                      still_wanted=still_wanted)
                links = source_link_set(answer, shown)
            else:
                result = gateway.call(lambda store: store.run(run_id).query(path, line, QUERY_DIRECTION[origin],
                                                                            module=module or None),
                                      still_wanted=still_wanted)
                links = link_set(result, origin, shown, module, self.module)
                if origin == KERNEL and details is not None and result.location.graph is not None:
                    self._add_launches(links, result.location, details, rows or [], run_id)
            if origin in (SOURCE, POST_GRAD, WRAPPER):  # a line that issues, waits on or needed a collective
                collectives = gateway.call(collectives_at, run_id, path, line, origin, still_wanted=still_wanted)
                if collectives:
                    more = f" (+{len(collectives) - 1})" if len(collectives) > 1 else ""
                    links.summary = f"⇄ {collective_line(collectives[0])}{more} · {links.summary}"
            if origin == SOURCE:  # what the model line holds (docs/memory.md)
                held = gateway.call(memory_at, run_id, path, line, still_wanted=still_wanted)
                if held:
                    links.summary = f"{links.summary} · {held}"
        except Stale:
            return
        files = {}
        for role, pane in links.panes.items():
            if pane.path and pane.path != shown.get(role):
                files[role] = gateway.call(read_file, pane.path, run_id, workspace if role == SOURCE else None)
        self.app.post_message(LinksReady(generation, links, files))

    def _add_launches(self, links: LinkSet, location, details: RunDetails, rows: list[KernelRow], run_id: int) -> None:
        """Called in the links worker: the launch lines of the kernel under the cursor."""
        graph = next((graph for graph in details.graphs if graph.key == location.graph.key), None)
        wrapper_path = graph.files.get("wrapper") if graph else None
        if not wrapper_path or not location.kernel:
            return
        known = [row.wrapper_lines for row in rows
                 if row.graph == location.graph.key and row.name == location.kernel and row.source_lines is not None]
        if known:
            lines = known[0]
        else:
            if wrapper_path not in self._launches:
                text = self.app.gateway.call(read_file, wrapper_path, run_id).text
                self._launches = {wrapper_path: launch_lines(text)}  # one wrapper's index at a time
            lines = self._launches[wrapper_path].get(location.kernel, [])
        add_kernel_launches(links, wrapper_path, lines)

    def show(self, message: LinksReady) -> None:
        if message.generation != self.generation:
            return  # the cursor moved on
        app = self.app
        links = message.links
        for role, pane in links.panes.items():
            if role == links.origin:
                continue
            view = app.view(role)
            if role in message.files:
                app.show_file(role, message.files[role], pane.focus_line)
            elif pane.focus_line is not None:
                view.move_cursor(pane.focus_line, announce=False)  # its cursor waits on the linked line
            view.set_linked(pane.lines, pane.focus_line)
        self.last_links = links
        self.last_query = (links.origin, app.view(links.origin).cursor_line)
        app.chain_line.text = links.summary
        if links.origin != ASM:
            app.asm.refresh()

    # -- enter / u: follow a link ------------------------------------------------------------------

    def follow(self, message: CodeView.FollowRequested) -> None:
        app = self.app
        origin = message.view.role
        links = self.last_links
        if links is None or self.last_query != (origin, message.line):
            app.notify("no links from this line yet", severity="warning")
            return
        targets = [SOURCE] if message.direction == "up" else FOLLOW_DOWN.get(origin, [KERNEL])
        if app.asm.shown and message.direction == "down" and origin == KERNEL:
            asm = app.view(ASM)
            if asm.linked:  # down from a kernel line: its PTX/SASS lines
                asm.focus()
                asm.move_cursor(min(asm.linked), center=True)
                return
        for target in targets:
            pane = links.panes.get(target)
            if target != origin and pane is not None and pane.lines:
                view = app.view(target)
                view.focus()
                view.move_cursor(pane.focus_line or pane.lines[0], center=True)
                return
        where = "the model source" if targets == [SOURCE] else "a generated line below it"
        app.notify(f"this line has no link to {where}", severity="warning")

    # -- the source pane's gutter marks ------------------------------------------------------------

    @thread_worker("markers", "load markers")
    def load_markers(self, path: str, run_id: int) -> None:
        try:  # the file's source index: the gutter marks now, every later cursor move a lookup
            index = self.app.gateway.call(lambda store: store.run(run_id).source_index(path))
        except (StoreError, UserError):
            return  # a file the run has no record of: no marks
        self.app.post_message(MarkersLoaded(run_id, path, sorted(index.answers)))

    def show_markers(self, message: MarkersLoaded) -> None:
        try:
            view = self.app.view(SOURCE)
        except NoMatches:  # the app is closing: its panes are gone
            return
        if message.run_id != self.app.run_id or message.path != view.path:
            return
        view.set_markers(message.lines)
        if self._awaiting_first_line:
            self._awaiting_first_line = False
            if message.lines:
                view.move_cursor(message.lines[0], center=True)
            else:
                self.request_links(SOURCE, view.cursor_line)
