"""`m`: narrow the kernel list and the linked lines to one module instance (a layer),
or to a group of alike instances.

The list shows the run's module instances as a tree, sibling instances of the same
shape folded into one row (`▸ blocks.2–46 (45 × Block) · same kernels`, the store's
RunView.module_groups): enter on a folded row keeps all its members, right (or
space) opens it to pick one, left closes it. Typing narrows to the instance paths
that contain the text, members of folded groups included.
"""
from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.store import InstanceGroup
from kernelscope.store.reading.folding import group_title

ALL = "(all modules)"


@dataclass(frozen=True)
class ModuleChoice:
    """What the filter keeps: `label` is shown, `paths` are the instances kept (with their
    submodules). No paths: every module."""

    label: str
    paths: tuple[str, ...]


EVERY_MODULE = ModuleChoice("", ())


@dataclass
class _Row:
    choice: ModuleChoice
    text: str
    group: InstanceGroup | None = None  # a folded group's row, or the group a member row is shown in


class ModuleList(OptionList):
    """The instance list; right or space opens the folded group under the cursor, left closes it."""

    BINDINGS = [
        Binding("right,space", "open_group", "open group", show=False),
        Binding("left", "close_group", "close group", show=False),
    ]

    def action_open_group(self) -> None:
        self._toggle_group(True)

    def action_close_group(self) -> None:
        self._toggle_group(False)

    def _toggle_group(self, opened: bool) -> None:
        screen = self.screen  # the ModuleFilterScreen it is shown in
        if isinstance(screen, ModuleFilterScreen):
            screen.toggle_group(opened)


class ModuleFilterScreen(ModalScreen):
    """Dismisses with a ModuleChoice, or None to keep the current filter."""

    BINDINGS = [Binding("escape", "dismiss_none", "close")]

    def __init__(self, modules: list[str], current: str, loaded: bool, groups: list[InstanceGroup] | None = None):
        super().__init__()
        self.modules, self.current, self.loaded = modules, current, loaded
        self.groups = groups or []
        self.opened: set[str] = set()  # labels of the folded groups shown open
        self.rows: list[_Row] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="modules", classes="dialog"):
            if not self.loaded:
                yield Static("The run's module instances are still loading; try again in a moment.")
            elif not self.modules:
                yield Static("This run records no module instances (recorded before module tracking, "
                             "or a plain function): nothing to filter by.")
            else:
                yield Static(f"module instance (now: {self.current or 'all'}) — type to narrow, enter to choose; "
                             "▸ alike instances folded: right opens, enter keeps them all")
                yield Input(placeholder="e.g. blocks.0 or attn", id="module-search")
                yield ModuleList(id="module-list")

    def on_mount(self) -> None:
        if self.query("#module-search"):
            self._show("")
            self.query_one("#module-search").focus()

    # -- the rows ------------------------------------------------------------------------

    def tree_rows(self) -> list[_Row]:
        """The instance tree, folded groups closed unless opened."""
        rows = [_Row(EVERY_MODULE, ALL)]

        def add(groups: list[InstanceGroup], depth: int) -> None:
            for group in groups:
                indent = "  " * depth
                if group.folded:
                    opened = group.label in self.opened
                    kernels = f" · {len(group.triton_kernels)} Triton, {group.extern_calls} extern each, same kernels"
                    rows.append(_Row(ModuleChoice(group.label, tuple(group.members)),
                                     f"{indent}{'▾' if opened else '▸'} {group_title(group)}{kernels}", group))
                    if opened:
                        rows.extend(_Row(ModuleChoice(member, (member,)), f"{indent}    {member}", group)
                                    for member in group.members)
                else:
                    rows.append(_Row(ModuleChoice(group.label, (group.label,)), f"{indent}  {group_title(group)}"))
                    add(group.children, depth + 1)

        if self.groups:
            add(self.groups, 0)
        else:  # a run read before module groups: the flat list of instances
            rows.extend(_Row(ModuleChoice(module, (module,)), module) for module in self.modules)
        return rows

    def _show(self, typed: str) -> None:
        if typed:
            self.rows = [_Row(EVERY_MODULE, ALL)] + [_Row(ModuleChoice(m, (m,)), m) for m in self.modules
                                                     if typed.lower() in m.lower()]
        else:
            self.rows = self.tree_rows()
        options = self.query_one(OptionList)
        highlighted = options.highlighted
        options.clear_options()
        options.add_options([Option(row.text) for row in self.rows])
        if highlighted is not None and self.rows:
            options.highlighted = min(highlighted, len(self.rows) - 1)

    # -- events ----------------------------------------------------------------------------

    @on(Input.Changed, "#module-search")
    def _narrow(self, event: Input.Changed) -> None:
        self._show(event.value.strip())

    @on(Input.Submitted, "#module-search")
    def _submit(self, event: Input.Submitted) -> None:
        """Enter on a typed path picks it when it names one instance exactly (or only one
        matches); otherwise the list takes the focus with the first match highlighted."""
        typed = event.value.strip()
        matches = [m for m in self.modules if typed.lower() in m.lower()]
        if typed and (typed in self.modules or len(matches) == 1):
            chosen = typed if typed in self.modules else matches[0]
            self.dismiss(ModuleChoice(chosen, (chosen,)))
            return
        options = self.query_one(OptionList)
        options.focus()
        options.highlighted = 1 if matches and typed else 0

    @on(OptionList.OptionSelected, "#module-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.rows[event.option_index].choice)

    def toggle_group(self, opened: bool) -> None:
        """Open (or close) the folded group under the cursor of the list; the cursor stays
        on the group's row."""
        options = self.query_one(OptionList)
        if options.highlighted is None or self.query_one(Input).value.strip():
            return
        group = self.rows[options.highlighted].group
        if group is None or (group.label in self.opened) == opened:
            return
        (self.opened.add if opened else self.opened.discard)(group.label)
        self._show("")
        options.highlighted = next(index for index, row in enumerate(self.rows)
                                   if row.group is group and row.choice.paths == tuple(group.members))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
