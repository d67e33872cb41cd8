"""`?`: the keys, on one screen."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """\
[b]kernelscope tui — keys[/b]

[b]Panes[/b]  1 source · 2 post-grad graph · 3 kernel · 4 wrapper · tab / shift+tab cycle
  ↑ ↓ j k  move the cursor: the linked lines light up in the other panes
  PgUp PgDn  Home End (g G)  page, top, bottom        ← → h l  scroll sideways
  n / N      next / previous linked line in this pane
  enter      follow the link down: source → post-grad → kernel → wrapper launch → kernel
  u, backspace  up to the model source line
  mouse      click a line to move there, double-click to follow, wheel to scroll

[b]Kernels[/b]  5 focuses the list · / search · s change the sort (or click a header) · enter open
  filter words: part of a name, kind:triton, kind:extern, fw, bw, inf, graph:0/1

[b]Below the kernel[/b]
  a  the fourth pane: wrapper → the kernel's SASS → its PTX → wrapper; the lines of the kernel
     pane's cursor line (or of the model line's ops) light up, the title has the kernel's
     registers, spills and occupancy; a SASS or PTX line lights up its kernel line and model line
  B  compile the kernel in the kernel pane to PTX and SASS (the engine worker; 1-2 s a kernel)

[b]Views[/b]
  r  runs (with each run's rank in a distributed job): enter switches, c marks two runs to compare
  o  distributed: the rank, which ranks compiled identical code, each graph's compute/communication
     order and its collectives with their model line and layer: enter opens the wrapper line
  b  graph breaks and recompiles, with their reasons: enter jumps to the source line
  M  memory: the peak, the model lines saving the most for the backward, each graph's allocation
     timeline with the bytes live after each step: enter opens the model or wrapper line
  e  numerics (kernelscope numerics): where compiled and eager part ways, lines beyond tolerance
  U  the program's own Triton kernels: each generated copy, the autotune config launched and the
     copy's first lines: enter opens the copy in the kernel pane
  m  module-instance filter: one layer, or a folded row of alike ones (right opens it); x clears it
  ?  this help        q  quit
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", classes="dialog"):
            yield Static(KEYS)
