"""What the app's controllers have in common: each is a plain object the app owns
(`app.runs`, `app.links`, …) with one job, and runs its store reads and compiles
in thread workers of the app (`thread_worker`).

Why controllers and not mixins: each controller owns its own state (the link
follower its generation, the asm mode its stage), and every way into it is a call
that names it (`app.links.request_links(...)`), so what a key or a message changes
can be read from app.py alone. The data flows one way: a key or a message reaches
the app, the app calls a controller, the controller starts a worker or changes
widgets; a worker's answer comes back to the app as a message (messages.py).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any


class Controller:
    """A controller of the app (app.py's KernelscopeApp) that owns it. `app` is typed
    loosely on purpose: app.py imports every controller, so a controller naming the
    app's class would make the two import each other."""

    def __init__(self, app: Any):
        self.app = app


def thread_worker(group: str, description: str) -> Callable:
    """Textual's `@work(thread=True, exclusive=True, exit_on_error=False)` for a controller's
    method: calling it starts the method in a thread worker of the app, named after the
    method (a failure reads `load_run failed: …` in the status line); a new worker of
    `group` cancels the one before it; an error is the app's `Worker.StateChanged`,
    never an exit."""

    def decorate(method: Callable) -> Callable:
        @wraps(method)
        def start(self: Controller, *args, **kwargs):
            return self.app.run_worker(partial(method, self, *args, **kwargs), name=method.__name__, group=group,
                                       description=description, exclusive=True, exit_on_error=False, thread=True)

        return start

    return decorate
