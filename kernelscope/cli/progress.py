"""Phase display for recordings: a live status line on a terminal, nothing otherwise."""
from __future__ import annotations

import contextlib
import sys

PHASES = {
    "import": "importing",
    "capture": "capturing graphs",
    "lower": "lowering",
    "codegen": "generating code",
    "store": "writing the store",
    "asm": "compiling below Triton",
}


@contextlib.contextmanager
def phase_display(enabled: bool):
    """Yields on_phase(phase, detail); shows it with rich when `enabled` and on a TTY."""
    if not (enabled and sys.stderr.isatty()):
        yield lambda phase, detail: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("starting") as status:

        def on_phase(phase: str, detail: str) -> None:
            label = PHASES.get(phase, phase)
            status.update(f"[bold]{label}[/bold] {detail}".rstrip())

        yield on_phase
