"""The footer of keys, rebuilt only when the keys it shows change."""
from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its key widgets, and so lays out the whole screen,
    whenever focus moves. Moving between the four code panes (the same keys) cost a
    100-200 ms frame that way; this one rebuilds only when what it shows differs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        shown = tuple((binding.key, binding.description, enabled)
                      for _node, binding, enabled, _tooltip in screen.active_bindings.values() if binding.show)
        if shown == self._shown:
            return
        if screen.app.app_focus:  # (the Footer itself waits for the app to have focus)
            self._shown = shown
        super().bindings_changed(screen)
