"""The messages the app's thread workers post back to the UI thread.

Every store read and every compile runs in a thread worker of a controller
(`controller.thread_worker`); what it read comes back as one of these, posted to
the app, which routes each to the controller that applies it (`app.py`, "messages
-> controllers"). Each carries everything the UI thread needs, and a generation or
run id wherever the answer can arrive after the screen moved on. They are also the
app's attributes (`KernelscopeApp.CompileEvent`), where they were first defined.
"""
from __future__ import annotations

from textual.message import Message

from kernelscope.store import InstanceGroup
from kernelscope.store.reading.graphs_and_kernels import KernelFacts
from kernelscope.store.results import RunDetails, RunSummary
from kernelscope.tui.linking import LinkSet
from kernelscope.tui.run_data import KernelRow
from kernelscope.tui.store_reads import OpenFile
from kernelscope.watch.events import WatchEvent

# -- the run on screen (run_loader.RunLoader) ---------------------------------------------


class RunLoaded(Message):
    def __init__(self, details: RunDetails, rows: list[KernelRow], source: OpenFile | None, cursor_line: int,
                 kept: bool, rank: str = ""):
        super().__init__()
        self.details, self.rows, self.source, self.cursor_line = details, rows, source, cursor_line
        self.kept = kept  # the cursor's source line was carried over from the previous run
        self.rank = rank  # `rank 1/2` for a rank of a distributed job


class FactsLoaded(Message):
    def __init__(self, run_id: int, facts: dict[str, KernelFacts], groups: list[InstanceGroup], builds: dict):
        super().__init__()
        self.run_id, self.facts, self.groups, self.builds = run_id, facts, groups, builds


# -- the linked lines (link_follower.LinkFollower) -----------------------------------------


class LinksReady(Message):
    def __init__(self, generation: int, links: LinkSet, files: dict[str, OpenFile]):
        super().__init__()
        self.generation, self.links, self.files = generation, links, files


class MarkersLoaded(Message):
    """The lines of a source file that have links (gutter marks), computed after the first paint."""

    def __init__(self, run_id: int, path: str, lines: list[int]):
        super().__init__()
        self.run_id, self.path, self.lines = run_id, path, lines


# -- below the kernel (asm_mode.AsmMode) ---------------------------------------------------


class AsmLoaded(Message):
    """What the PTX/SASS pane shows for the kernel pane's lines: a stage file (`file`, its
    `lines` linked to them) or, without a build, why not (`message`)."""

    def __init__(self, generation: int, kernel: str, stage: str, file: OpenFile | None, lines: list[int],
                 title: str, message: str = ""):
        super().__init__()
        self.generation, self.kernel, self.stage, self.file, self.lines = generation, kernel, stage, file, lines
        self.title, self.message = title, message


class AsmBuilt(Message):
    def __init__(self, run_id: int, summary: dict):
        super().__init__()
        self.run_id, self.summary = run_id, summary


class AsmProgress(Message):
    def __init__(self, detail: str):
        super().__init__()
        self.detail = detail


# -- a file opened from a list (file_opener.FileOpener) ----------------------------------


class FileOpened(Message):
    """A file to show in `pane` with the cursor on `line` (kernel list, graph breaks)."""

    def __init__(self, pane: str, file: OpenFile, line: int):
        super().__init__()
        self.pane, self.file, self.line = pane, file, line


# -- dialogs (dialogs.Dialogs) ---------------------------------------------------------------


class RunsListed(Message):
    def __init__(self, runs: list[RunSummary], ranks: dict[int, str] | None = None):
        super().__init__()
        self.runs, self.ranks = runs, ranks or {}


class DiffReady(Message):
    def __init__(self, title: str, report: str):
        super().__init__()
        self.title, self.report = title, report


class CommLoaded(Message):
    def __init__(self, view):
        super().__init__()
        self.view = view


class MemoryLoaded(Message):
    def __init__(self, memory):
        super().__init__()
        self.memory = memory  # a RunMemory, or None
class UserKernelsLoaded(Message):
    def __init__(self, kernels, copies):
        super().__init__()
        self.kernels = kernels  # UserKernelRef list, in graph and kernel order
        self.copies = copies  # each kernel file's lines


class NumericsLoaded(Message):
    def __init__(self, report):
        super().__init__()
        self.report = report  # NumericsReport, or None for a run recorded without


# -- compiling (compile_status.CompileStatus) ------------------------------------------------


class CompileEvent(Message):
    def __init__(self, event: WatchEvent):
        super().__init__()
        self.event = event
