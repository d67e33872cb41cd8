"""Watch mode: the debouncer, the event filter, retention, the engine worker and
whole watch sessions on real file edits of a real example.

The fast tests use synthetic watchdog events and an injected clock; the tests
marked slow start real engine workers (torch imported in a subprocess) and
compile after real edits of a copy of examples/mlp.py.
"""
from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO
from synthetic_runs import make_mlp_run
from watchdog.events import (
    DirModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from kernelscope.errors import TargetError, UserError
from kernelscope.store import StoreBackend
from kernelscope.store.writing.deletion import prune_runs
from kernelscope.watch import (
    BuildFailed,
    BuildFinished,
    BuildPhase,
    BuildStarted,
    WatchOptions,
    WatchSession,
    WorkerOutput,
    WorkerRestarted,
)
from kernelscope.watch.debounce import Debouncer
from kernelscope.watch.watcher import ChangeFilter, FileWatcher, is_editor_artifact
from kernelscope.watch.worker_client import WorkerClient, WorkerRequestError

MLP_SOURCE = (REPO / "examples" / "mlp.py").read_text()
GELU_LINE = 'h = F.gelu(h)'
ERF = "libdevice.erf"


# -- debouncer (injected clock) -------------------------------------------------------------


def test_a_burst_of_changes_builds_once_after_the_quiet_period():
    debouncer = Debouncer(quiet_seconds=0.5)
    for step in range(50):
        debouncer.change("/w/mlp.py", now=10.0 + step * 0.01)
    assert debouncer.due_at() == pytest.approx(10.49 + 0.5)
    assert not debouncer.is_due(10.98)
    assert debouncer.is_due(10.99)
    assert debouncer.start_build() == ["/w/mlp.py"]
    debouncer.finish_build()
    assert debouncer.due_at() is None
    assert not debouncer.is_due(1000.0)


def test_each_change_restarts_the_quiet_period():
    debouncer = Debouncer(quiet_seconds=1.0)
    debouncer.change("/w/a.py", now=0.0)
    debouncer.change("/w/b.py", now=0.9)
    assert not debouncer.is_due(1.5)
    assert debouncer.is_due(1.9)
    assert debouncer.start_build() == ["/w/a.py", "/w/b.py"]


def test_changes_during_a_build_trigger_exactly_one_more_build():
    debouncer = Debouncer(quiet_seconds=0.2)
    debouncer.change("/w/mlp.py", now=0.0)
    assert debouncer.start_build() == ["/w/mlp.py"]
    for step in range(5):
        debouncer.change("/w/mlp.py", now=1.0 + step)
        debouncer.change("/w/layers.py", now=1.5 + step)
        assert not debouncer.is_due(100.0)  # never while building
    debouncer.finish_build()
    assert debouncer.is_due(5.7)
    assert debouncer.start_build() == ["/w/mlp.py", "/w/layers.py"]
    debouncer.finish_build()
    assert not debouncer.is_due(100.0)
    with pytest.raises(ValueError):
        Debouncer(quiet_seconds=-1)


def test_a_second_build_cannot_start_while_one_runs():
    debouncer = Debouncer(quiet_seconds=0.0)
    debouncer.start_build()
    with pytest.raises(RuntimeError):
        debouncer.start_build()


# -- the event filter (synthetic watchdog events) --------------------------------------------


@pytest.fixture
def change_filter(tmp_path):
    (tmp_path / "pkg").mkdir()
    return ChangeFilter(
        files=[tmp_path / "mlp.py", tmp_path / "pkg" / "layers.py"],
        excluded_dirs=[tmp_path / ".kernelscope"],
    )


def test_filter_accepts_changes_to_imported_files(change_filter, tmp_path):
    mlp, layers = str(tmp_path / "mlp.py"), str(tmp_path / "pkg" / "layers.py")
    assert change_filter.changed_path(FileModifiedEvent(mlp)) == mlp
    assert change_filter.changed_path(FileModifiedEvent(layers)) == layers
    assert change_filter.changed_path(FileCreatedEvent(mlp)) == mlp
    assert change_filter.changed_path(FileDeletedEvent(mlp)) == mlp
    # atomic save: a temporary file renamed onto the watched one, or the original moved away
    assert change_filter.changed_path(FileMovedEvent(str(tmp_path / ".mlp.py.tmp1234"), mlp)) == mlp
    assert change_filter.changed_path(FileMovedEvent(mlp, str(tmp_path / "mlp.py~"))) == mlp


def test_filter_rejects_everything_else(change_filter, tmp_path):
    rejected = [
        FileModifiedEvent(str(tmp_path / "other.py")),  # in a watched dir, but not imported
        FileCreatedEvent(str(tmp_path / "notes.txt")),
        FileCreatedEvent(str(tmp_path / "elsewhere" / "new.py")),  # not a watched dir
        FileModifiedEvent(str(tmp_path / ".kernelscope" / "kernelscope.sqlite")),
        FileCreatedEvent(str(tmp_path / ".kernelscope" / "runs" / "3" / "wrapper.py")),
        FileCreatedEvent(str(tmp_path / "__pycache__" / "mlp.cpython-311.pyc")),
        FileModifiedEvent(str(tmp_path / ".git" / "index")),
        FileOpenedEvent(str(tmp_path / "mlp.py")),
        FileClosedEvent(str(tmp_path / "mlp.py")),
        DirModifiedEvent(str(tmp_path)),
        FileMovedEvent(str(tmp_path / "a.txt"), str(tmp_path / "b.txt")),
    ]
    for event in rejected:
        assert change_filter.changed_path(event) is None, event


@pytest.mark.parametrize("name", [".mlp.py.swp", ".mlp.py.swx", "mlp.py~", ".#mlp.py", "#mlp.py#", "4913",
                                  "mlp.py___jb_tmp___", "mlp.py.bak"])
def test_filter_ignores_editor_swap_backup_and_temporary_files(change_filter, tmp_path, name):
    assert is_editor_artifact(name)
    assert change_filter.changed_path(FileCreatedEvent(str(tmp_path / name))) is None
    assert change_filter.changed_path(FileModifiedEvent(str(tmp_path / name))) is None


def test_filter_accepts_a_new_module_beside_the_imported_files(change_filter, tmp_path):
    """A model that failed with an ImportError recovers when the module appears."""
    new = str(tmp_path / "pkg" / "blocks.py")
    assert change_filter.changed_path(FileCreatedEvent(new)) == new
    assert change_filter.changed_path(FileMovedEvent(str(tmp_path / "pkg" / "x.tmp"), new)) == new
    assert change_filter.changed_path(FileModifiedEvent(new)) is None  # until a build imports it


def test_synthetic_event_stream_through_the_handler_debounces_to_one_build(tmp_path):
    """50 saves (each: modified, closed) plus noise, fed to the watcher's handler with an injected clock."""
    clock = [0.0]
    debouncer = Debouncer(quiet_seconds=0.3)
    watcher = FileWatcher(lambda path: debouncer.change(path, clock[0]), excluded_dirs=[tmp_path / ".kernelscope"])
    mlp = str(tmp_path / "mlp.py")
    watcher.watch([mlp])
    handler = watcher._handler
    for save in range(50):
        clock[0] = save * 0.005
        handler.dispatch(FileModifiedEvent(mlp))
        handler.dispatch(FileClosedEvent(mlp))
        handler.dispatch(FileCreatedEvent(str(tmp_path / ".mlp.py.swp")))
        handler.dispatch(FileModifiedEvent(str(tmp_path / ".kernelscope" / "kernelscope.sqlite")))
    builds = 0
    for tick in range(200):
        now = tick * 0.01
        if debouncer.is_due(now):
            assert debouncer.start_build() == [mlp]
            builds += 1
            debouncer.finish_build()
    assert builds == 1
    assert debouncer.pending == []


def test_watcher_sees_real_saves_but_not_the_store(tmp_path):
    (tmp_path / "mlp.py").write_text("x = 1\n")
    (tmp_path / ".kernelscope").mkdir()
    seen = []
    arrived = threading.Event()

    def on_change(path):
        seen.append(path)
        arrived.set()

    watcher = FileWatcher(on_change, excluded_dirs=[tmp_path / ".kernelscope"])
    assert watcher.watch([tmp_path / "mlp.py"]) == [str((tmp_path / "mlp.py").resolve())]
    assert watcher.directories == [str(tmp_path.resolve())]
    watcher.start()
    try:
        (tmp_path / ".kernelscope" / "kernelscope.sqlite").write_text("not a change")
        (tmp_path / "notes.txt").write_text("not a change")
        (tmp_path / ".mlp.py.swp").write_text("not a change")
        time.sleep(0.5)
        assert seen == []
        (tmp_path / "mlp.py").write_text("x = 2\n")
        assert arrived.wait(10)
        assert set(seen) == {str((tmp_path / "mlp.py").resolve())}
    finally:
        watcher.stop()


# -- retention ----------------------------------------------------------------------------------


def test_prune_keeps_the_newest_runs_of_the_target_and_deletes_files_of_the_others(tmp_path):
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        ids = [store.write_run(make_mlp_run(tmp_path)) for _ in range(5)]
        other = make_mlp_run(tmp_path)
        other.target = "examples/other.py:make"
        other_id = store.write_run(other)
        for run_id in ids + [other_id]:
            assert (root / "runs" / str(run_id) / "graphs").is_dir()

        assert prune_runs(store.conn, store.root, "examples/mlp.py:make", keep=2) == ids[:3]

        assert sorted(run.id for run in store.runs()) == ids[3:] + [other_id]
        for run_id in ids[:3]:
            assert not (root / "runs" / str(run_id)).exists()
        for run_id in ids[3:] + [other_id]:
            assert (root / "runs" / str(run_id) / "graphs").is_dir()
        assert prune_runs(store.conn, store.root, "examples/mlp.py:make", keep=2) == []
        with pytest.raises(UserError, match="--keep"):
            prune_runs(store.conn, store.root, "examples/mlp.py:make", keep=0)


# -- sessions and the CLI: argument errors (no worker started) ----------------------------------


def test_session_refuses_a_missing_or_malformed_target(tmp_path):
    with pytest.raises(TargetError, match="nothere.py: no such file"):
        WatchSession(WatchOptions("nothere.py:make", workspace=tmp_path), print)
    with pytest.raises(TargetError, match="PATH.py:FACTORY"):
        WatchSession(WatchOptions("mlp", workspace=tmp_path), print)
    with pytest.raises(TargetError, match="mlp.py: no such file"):  # a script (tests/watch/test_watch_script.py)
        WatchSession(WatchOptions("mlp.py", workspace=tmp_path), print)


def test_cli_refuses_keep_zero(run_cli):
    result = run_cli(["watch", "examples/mlp.py:make", "--keep", "0"])
    assert result.returncode == 2
    assert "--keep: expected a whole number from 1, got '0'" in result.stderr


def test_watch_front_end_modules_never_import_torch():
    code = ("import sys, kernelscope.watch, kernelscope.cli.watch_cmd, kernelscope.watch.worker_client; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'kernelscope.engine'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- the worker protocol (no compile) -------------------------------------------------------------


def test_worker_answers_protocol_errors_and_stays_up(tmp_path):
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "explode"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "record", "params": {"target": 3}}),
        json.dumps({"id": 3, "method": "initialize"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "initialize"}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "shutdown"}),
    ]
    result = subprocess.run([sys.executable, "-m", "kernelscope.engine.worker"], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0
    assert [(a.get("id"), a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700), (1, -32601), (2, -32602), (3, -32600), (4, None), (5, None)]
    assert answers[4]["result"]["protocol"] == 1
    assert answers[4]["result"]["torch"] is None  # not preloaded: initialize is instant


# -- real compiles ----------------------------------------------------------------------------------


class EventLog:
    """Collects a session's events; tests wait for the ones they expect."""

    def __init__(self):
        self.events = []
        self._condition = threading.Condition()
        self.on_event_hook = None

    def __call__(self, event):
        if self.on_event_hook is not None:
            self.on_event_hook(event)
        with self._condition:
            self.events.append(event)
            self._condition.notify_all()

    def wait_for(self, predicate, timeout=180.0, after=0):
        """The first event (at index >= after) matching predicate."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for event in self.events[after:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    shown = [e for e in self.events if not isinstance(e, (WorkerOutput, BuildPhase))]
                    raise AssertionError(f"no matching event within {timeout}s; events: {shown}")
                self._condition.wait(remaining)

    def build_result(self, build, timeout=180.0):
        return self.wait_for(lambda e: isinstance(e, (BuildFinished, BuildFailed)) and e.build == build, timeout)

    def of_type(self, kind):
        with self._condition:
            return [event for event in self.events if isinstance(event, kind)]


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "mlp.py").write_text(MLP_SOURCE)
    return tmp_path


@pytest.fixture
def start_session(workspace):
    sessions = []

    def start(quiet_seconds=0.2, keep=20, target="mlp.py:make"):
        log = EventLog()
        session = WatchSession(WatchOptions(target, store=workspace / ".kernelscope", workspace=workspace,
                                            device="virtual-cuda", keep=keep, quiet_seconds=quiet_seconds), log)
        sessions.append(session)
        session.start()
        return session, log

    yield start
    for session in sessions:
        session.stop()


def kernel_text(store_root: Path, run_id: int) -> str:
    with StoreBackend(store_root, create=False) as store:
        details = store.show(run_id)
        return "\n".join(store.absolute_path(k.file).read_text() for k in details.kernels if k.file)


def latest_run(store_root: Path) -> int | None:
    with StoreBackend(store_root, create=False) as store:
        return store.latest_run_id("mlp.py:make")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.slow
def test_an_edit_records_a_new_run_whose_kernels_reflect_it(start_session, workspace):
    session, log = start_session()
    first = log.build_result(1)
    assert isinstance(first, BuildFinished), first
    store_root = workspace / ".kernelscope"
    assert ERF in kernel_text(store_root, first.run_id)
    assert set(first.timings) == {"import", "capture", "lower", "codegen", "store", "total"}
    assert session.watched_files == [str((workspace / "mlp.py").resolve())]

    edit(workspace / "mlp.py", GELU_LINE, "h = torch.relu(h)")
    second = log.build_result(2)
    assert isinstance(second, BuildFinished), second
    assert second.run_id > first.run_id
    assert latest_run(store_root) == second.run_id
    kernels = kernel_text(store_root, second.run_id)
    assert ERF not in kernels
    assert "triton_helpers.maximum" in kernels
    started = log.wait_for(lambda e: isinstance(e, BuildStarted) and e.build == 2)
    assert started.changed == [str((workspace / "mlp.py").resolve())]


@pytest.mark.slow
def test_a_burst_of_50_saves_builds_at_most_twice_and_the_last_save_wins(start_session, workspace):
    session, log = start_session(quiet_seconds=0.3, keep=2)
    assert isinstance(log.build_result(1), BuildFinished)
    path = workspace / "mlp.py"
    for save in range(50):
        replacement = ("h = torch.relu(h)" if save == 49
                       else ("h = torch.tanh(h)" if save % 2 else "h = torch.sigmoid(h)"))
        path.write_text(MLP_SOURCE.replace(GELU_LINE, replacement))
    log.wait_for(lambda e: isinstance(e, BuildStarted) and e.build == 2)
    while True:  # until no build runs and none started for 2 s (the quiet period is 0.3 s)
        last = log.of_type(BuildStarted)[-1].build
        log.build_result(last)
        time.sleep(2.0)
        if log.of_type(BuildStarted)[-1].build == last:
            break
    builds_after_burst = [e for e in log.of_type(BuildStarted) if e.build > 1]
    assert 1 <= len(builds_after_burst) <= 2
    final = log.build_result(builds_after_burst[-1].build)
    assert isinstance(final, BuildFinished), final
    store_root = workspace / ".kernelscope"
    assert latest_run(store_root) == final.run_id
    kernels = kernel_text(store_root, final.run_id)
    assert "triton_helpers.maximum" in kernels
    for absent in (ERF, "libdevice.tanh", "tl.sigmoid"):
        assert absent not in kernels
    # retention: keep=2 runs of this target, the pruned ones' files are gone
    with StoreBackend(store_root, create=False) as store:
        kept = [run.id for run in store.runs()]
    assert len(kept) == 2 and final.run_id in kept
    for run_dir in (store_root / "runs").iterdir():
        if run_dir.name.isdigit():
            assert int(run_dir.name) in kept


@pytest.mark.slow
def test_broken_saves_report_file_and_line_and_the_last_good_run_stays(start_session, workspace):
    session, log = start_session()
    good = log.build_result(1)
    assert isinstance(good, BuildFinished), good
    store_root, path = workspace / ".kernelscope", workspace / "mlp.py"
    lines = MLP_SOURCE.splitlines(keepends=True)
    forward_line = next(i for i, line in enumerate(lines, 1) if "def forward(self, x):" in line)

    path.write_text(MLP_SOURCE.replace("def forward(self, x):", "def forward(self, x)"))
    broken = log.build_result(2)
    assert isinstance(broken, BuildFailed), broken
    assert (broken.kind, broken.file, broken.line) == ("syntax", str(path), forward_line)
    assert "expected ':'" in broken.message
    assert broken.last_good_run == good.run_id
    assert latest_run(store_root) == good.run_id
    assert ERF in kernel_text(store_root, good.run_id)  # its files are still there

    make_line = next(i for i, line in enumerate(lines, 1) if "torch.manual_seed(0)" in line)
    path.write_text(MLP_SOURCE.replace("torch.manual_seed(0)", "raise ValueError('no weights today')"))
    raised = log.build_result(3)
    assert isinstance(raised, BuildFailed), raised
    assert (raised.kind, raised.file, raised.line) == ("target", str(path), make_line)
    assert "ValueError: no weights today" in raised.message
    assert latest_run(store_root) == good.run_id

    path.write_text(MLP_SOURCE.replace(GELU_LINE, "h = torch.relu(h)"))
    fixed = log.build_result(4)
    assert isinstance(fixed, BuildFinished), fixed
    assert latest_run(store_root) == fixed.run_id
    assert ERF not in kernel_text(store_root, fixed.run_id)


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_the_next_save_recovers(start_session, workspace):
    session, log = start_session()
    good = log.build_result(1)
    assert isinstance(good, BuildFinished), good
    first_pid = session.worker_pid

    def kill_during_build_2(event):
        if isinstance(event, BuildPhase) and event.build == 2 and event.phase == "capture":
            os.kill(first_pid, signal.SIGKILL)

    log.on_event_hook = kill_during_build_2
    edit(workspace / "mlp.py", GELU_LINE, "h = torch.relu(h)")
    crashed = log.build_result(2)
    assert isinstance(crashed, BuildFailed), crashed
    assert crashed.kind == "crash" and "killed by SIGKILL" in crashed.message
    assert crashed.last_good_run == good.run_id
    restarted = log.wait_for(lambda e: isinstance(e, WorkerRestarted))
    assert restarted.pid == session.worker_pid != first_pid
    assert latest_run(workspace / ".kernelscope") == good.run_id

    edit(workspace / "mlp.py", "torch.relu(h)", "torch.tanh(h)")
    recovered = log.build_result(3)
    assert isinstance(recovered, BuildFinished), recovered
    assert "libdevice.tanh" in kernel_text(workspace / ".kernelscope", recovered.run_id)

    # killed between builds: the next save starts a new worker and says why
    second_pid = session.worker_pid
    os.kill(second_pid, signal.SIGKILL)
    events_before = len(log.events)
    edit(workspace / "mlp.py", "torch.tanh(h)", "torch.sigmoid(h)")
    again = log.build_result(4)
    assert isinstance(again, BuildFinished), again
    idle_restart = log.wait_for(lambda e: isinstance(e, WorkerRestarted), after=events_before)
    assert "killed by SIGKILL between builds" in idle_restart.reason


@pytest.mark.slow
def test_worker_reloads_imported_workspace_modules_and_keeps_user_output_off_the_protocol(workspace):
    """One warm worker, several requests: prints (Python and fd 1), a neighbour module, its edits and errors."""
    (workspace / "layers.py").write_text("import torch.nn.functional as F\n\n\ndef act(h):\n    return F.gelu(h)\n")
    (workspace / "model.py").write_text(
        MLP_SOURCE.replace("import torch.nn.functional as F\n", "import os\n\nfrom layers import act\n")
        .replace(GELU_LINE, "h = act(h)")
        .replace("torch.manual_seed(0)", "print('factory says hi'); os.write(1, b'raw fd 1\\n'); torch.manual_seed(0)")
    )
    output = []
    client = WorkerClient(cwd=workspace, preload_device="virtual-cuda", on_output=output.append)
    params = {"target": "model.py:make", "store": str(workspace / ".kernelscope"), "workspace": str(workspace),
              "options": {"device": "virtual-cuda"}}
    client.start()
    try:
        first = client.request("record", params)
        assert first["files"] == [str((workspace / "model.py").resolve()), str((workspace / "layers.py").resolve())]
        assert ERF in kernel_text(workspace / ".kernelscope", first["run_id"])
        assert "factory says hi" in output and "raw fd 1" in output

        (workspace / "layers.py").write_text("import torch\n\n\ndef act(h):\n    return torch.relu(h)\n")
        second = client.request("record", params)
        assert ERF not in kernel_text(workspace / ".kernelscope", second["run_id"])

        # Same length, same mtime, and a .pyc of the old text beside it (as a cold compile leaves):
        # Python's own loader would run the stale .pyc; the worker must compile the new source.
        layers = workspace / "layers.py"
        old_stat = layers.stat()
        py_compile.compile(str(layers), cfile=importlib.util.cache_from_source(str(layers)))
        layers.write_text(layers.read_text().replace("torch.relu(h)", "torch.tanh(h)"))
        os.utime(layers, ns=(old_stat.st_atime_ns, old_stat.st_mtime_ns))
        assert layers.stat().st_size == old_stat.st_size
        third = client.request("record", params)
        assert "libdevice.tanh" in kernel_text(workspace / ".kernelscope", third["run_id"])

        (workspace / "layers.py").write_text("import torch\n\n\ndef act(h):\n    return torch.relu(h\n")
        with pytest.raises(WorkerRequestError) as failed:
            client.request("record", params)
        data = failed.value.data
        assert failed.value.code == 3
        assert (data["kind"], data["file"], data["line"]) == ("syntax", str(workspace / "layers.py"), 5)
        assert str((workspace / "layers.py").resolve()) in data["files"]

        (workspace / "layers.py").write_text("import torch\n\n\ndef act(h):\n    return h.no_such_method()\n")
        with pytest.raises(WorkerRequestError) as failed:
            client.request("record", params)
        data = failed.value.data
        assert (data["kind"], data["file"], data["line"]) == ("target", str(workspace / "layers.py"), 5)
        assert "AttributeError" in data["message"]
        assert client.alive
    finally:
        client.stop()


@pytest.mark.slow
def test_cli_watch_prints_json_events_and_exits_cleanly_on_ctrl_c(workspace):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelscope", "watch", "mlp.py:make", "--json", "--target", "virtual-cuda",
         "--quiet-period", "0.2"],
        cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    events = []
    deadline = threading.Timer(300, process.kill)  # never hang the test run
    deadline.start()
    try:
        for line in process.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] == "build_finished" and events[-1]["build"] == 1:
                edit(workspace / "mlp.py", GELU_LINE, "h = torch.relu(h)")
            if events[-1]["event"] == "build_finished" and events[-1]["build"] == 2:
                process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        deadline.cancel()
        if process.poll() is None:
            process.kill()
    kinds = [event["event"] for event in events]
    assert kinds[0] == "watching"
    assert kinds.count("build_finished") == 2 and kinds[-1] == "stopped"
    finished = [event for event in events if event["event"] == "build_finished"]
    assert finished[1]["run_id"] > finished[0]["run_id"]
    assert ERF not in kernel_text(workspace / ".kernelscope", finished[1]["run_id"])
    assert events[-1] == {**events[-1], "builds": 2, "last_good_run": finished[1]["run_id"]}
