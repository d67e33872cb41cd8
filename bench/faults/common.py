"""What every part of the reliability campaign shares: a workspace with a model, the
store check after each fault, the tally of what was injected and what survived."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEVICE = "cpu-triton"  # every target goes through the same worker; this one compiles fastest
MODEL_NAME = "model.py"

# The model: examples/mlp.py, plus factories that fail the ways user code fails. The watch
# and TUI front ends see a fault as an edit of `make` (a save that breaks the model); the
# language server compiles the fault's own factory.
FAULTS = {
    "raises": "raise ValueError('the factory is broken')",
    "os_exit": "import os; os._exit(3)",
    "segfault": "import ctypes; ctypes.string_at(0)",
    "memory": "chunks = [torch.ones(2 ** 26) for _ in range(10_000)]",  # 256 MB each, touched, until the cap
    "hang": "import time; time.sleep(3600)",
}
# What the front end must call each fault (the failure's kind).
EXPECTED_KIND = {"raises": {"target"}, "os_exit": {"crash"}, "segfault": {"crash"}, "memory": {"memory", "crash"},
                 "hang": {"timeout"}}
MEMORY_LIMIT_MB = 3072  # the worker's cap in the campaign (its own use is ~1.2 GB of address space)
BUILD_TIMEOUT = 20.0  # seconds: the compile timeout the campaign sets


def model_source(body: str | None = None) -> str:
    """examples/mlp.py with `make()`'s body replaced by `body` (a fault) when given."""
    source = (REPO / "examples" / "mlp.py").read_text()
    source += "".join(f"\n\ndef fault_{name}():\n    {code}\n" for name, code in FAULTS.items())
    if body is not None:
        source = source.replace("def make(", f"def make():\n    {body}\n\n\ndef _original_make(", 1)
    return source


def make_workspace(prefix: str) -> Path:
    workspace = Path(tempfile.mkdtemp(prefix=f"kernelscope-{prefix}-"))
    (workspace / MODEL_NAME).write_text(model_source())
    return workspace


def touch_model(workspace: Path, counter: int) -> None:
    """A save that changes the file (a comment) without changing the graph."""
    path = workspace / MODEL_NAME
    text = model_source()
    path.write_text(text + f"\n# edit {counter}\n")


@dataclass
class Tally:
    """One part of the campaign: faults injected and survived, runs lost, what was said."""

    name: str
    injected: int = 0
    survived: int = 0
    runs_lost: int = 0
    landed: int = 0  # kills that hit a compile in progress (the rest hit an idle worker)
    leftovers: int = 0  # staging folders of interrupted writes (invisible; doctor removes them)
    messages: list[str] = field(default_factory=list)  # what the front end said, a sample
    failures: list[str] = field(default_factory=list)  # why a fault was not survived

    def say(self, message: str) -> None:
        if message and message not in self.messages and len(self.messages) < 12:
            self.messages.append(message)

    def fail(self, why: str) -> None:
        self.failures.append(why)


def check_store(store: Path, committed: set[int], tally: Tally) -> bool:
    """The store after a fault: integrity and every run whole with its files as written
    (doctor's check), and no committed run lost. Staging leftovers are counted, not failed:
    no reader sees them and `kernelscope doctor --repair` removes them."""
    from kernelscope.store.health import integrity

    report = integrity.check(store)
    tally.leftovers += sum(1 for problem in report.problems if problem.kind == "leftover")
    problems = [problem.message for problem in report.problems if problem.kind != "leftover"]
    if problems:
        tally.fail(f"store check: {problems[:3]}")
    present = set(_run_ids(store))
    lost = committed - present
    if lost:
        tally.runs_lost += len(lost)
        tally.fail(f"runs lost: {sorted(lost)}")
    return not problems and not lost


def _run_ids(store: Path) -> list[int]:
    from kernelscope.store import StoreBackend

    with StoreBackend(store, create=False) as opened:
        return [run.id for run in opened.runs()]


def worker_pids(parent: int) -> list[int]:
    """The engine workers that process `parent` started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and "kernelscope.engine.worker" in cmdline:
            found.append(int(entry.name))
    return found


def kill(pid: int) -> bool:
    """SIGKILL `pid` and wait until it is dead (a process inside a system call dies when
    that call returns: without the wait a kill could land on the next compile)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.005)
    return True


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
