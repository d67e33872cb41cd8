"""Helpers of the terminal explorer's Pilot tests (tests/tui/, and the TUI parts of
tests/profile/ and tests/whole/): the terminal size they run at and waits on the app's
workers."""
from __future__ import annotations

import time

SIZE = (160, 48)


async def settle(pilot, condition, timeout: float = 20.0) -> None:
    """Let the workers run until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the app did not reach the expected state in time")
        await pilot.pause(0.05)


async def links_for(pilot, app, role: str, line: int) -> None:
    """Put the cursor of pane `role` on `line` and wait for the linked lines."""
    app.view(role).focus()
    generation = app.link_generation
    app.view(role).move_cursor(line, center=True)
    await settle(pilot, lambda: app.link_generation > generation and app.last_query == (role, line))


async def started(pilot, app) -> None:
    await settle(pilot, lambda: app.last_links is not None)
