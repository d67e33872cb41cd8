"""The line under the panes: where the cursor's line sits in the chain (graph,
post-grad nodes, kernels, module instance), as linking.describe words it."""
from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class ChainLine(Widget):
    """Its text changes on every cursor move, so a change only repaints this line
    (a Static's update lays out the whole screen again, which redrew every pane)."""

    text = reactive("", layout=False)

    def render(self) -> Text:
        return Text(self.text, no_wrap=True, overflow="ellipsis")
