"""Opening a file in a pane from a list: a kernel chosen in the kernel list (its file
in the kernel pane, or its launch in the wrapper for a kernel without a file), a
graph break's source line, a collective's wrapper line. The file is read in the
"open" worker; `show` puts it in its pane with the focus and the cursor on the line
(and the cursor move asks for its links)."""
from __future__ import annotations

from kernelscope.store.results import KERNEL, SOURCE, WRAPPER
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.kernel_list import KernelList
from kernelscope.tui.messages import FileOpened
from kernelscope.tui.run_data import KernelRow
from kernelscope.tui.store_reads import read_file, read_kernel, read_source


class FileOpener(Controller):
    def kernel_chosen(self, message: KernelList.KernelChosen) -> None:
        details = self.app.details
        if details is None:
            return
        wrapper = next((graph.files.get("wrapper") for graph in details.graphs if graph.key == message.row.graph), None)
        self.open_kernel(message.row, details.summary.id, wrapper)

    @thread_worker("open", "open kernel")
    def open_kernel(self, row: KernelRow, run_id: int, wrapper_path: str | None) -> None:
        gateway = self.app.gateway
        if row.file:
            file, line = gateway.call(read_kernel, row.file, run_id)
            self.app.post_message(FileOpened(KERNEL, file, line))
        elif wrapper_path:
            file = gateway.call(read_file, wrapper_path, run_id)
            line = row.wrapper_lines[0] if row.wrapper_lines else _line_containing(file.text, row.name.split("#")[0])
            self.app.post_message(FileOpened(WRAPPER, file, line))

    @thread_worker("open", "open source")
    def open_source(self, path: str, line: int, run_id: int, workspace: str) -> None:
        file = self.app.gateway.call(read_source, path, run_id, workspace)
        self.app.post_message(FileOpened(SOURCE, file, line))

    @thread_worker("open", "open file")
    def open_generated(self, role: str, path: str, line: int, run_id: int) -> None:
        self.app.post_message(FileOpened(role, self.app.gateway.call(read_file, path, run_id), line))

    def show(self, message: FileOpened) -> None:
        app = self.app
        app.show_file(message.pane, message.file, message.line)
        view = app.view(message.pane)
        view.focus()
        view.move_cursor(message.line, center=True)


def _line_containing(text: str, needle: str) -> int:
    """The first line of `text` with `needle` outside a comment (1 when none)."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line and not line.lstrip().startswith("#"):
            return number
    return 1
