"""Watch mode on a whole script (`kernelscope watch SCRIPT.py -- ARGS`): argument checks,
the worker's `record` request with a `script`, and a session on real edits of a small
script that imports a workspace module (the slow tests compile in a real engine worker)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO
from test_watch import EventLog, kernel_text

from kernelscope.errors import UserError
from kernelscope.store import StoreBackend
from kernelscope.watch import BuildFailed, BuildFinished, BuildStarted, WatchOptions, WatchSession, WorkerOutput
from kernelscope.watch.session import resolve_target

HELPER = "import torch\n\n\ndef act(x):\n    return torch.relu(x)\n"
SCRIPT = """import argparse

import torch

from helper import act


def f(x):
    return act(x * 2.0) + 1.0


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=1)
args = parser.parse_args()
step = torch.compile(f)
for _ in range(args.steps):
    step(torch.randn(8, 8))
print(f"script ran {args.steps} step(s)")
"""
RELU, TANH = "triton_helpers.maximum", "libdevice.tanh"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "train.py").write_text(SCRIPT)
    return tmp_path


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


# -- arguments (no worker) ------------------------------------------------------------------------


def test_a_path_without_a_factory_is_a_script_and_refuses_factory_options(workspace):
    assert resolve_target("train.py", workspace) == ((workspace / "train.py").resolve(), None)
    assert resolve_target("train.py:main", workspace) == ((workspace / "train.py").resolve(), "main")
    session = WatchSession(WatchOptions("train.py", workspace=workspace, script_args=["--steps", "2"]), print)
    assert session.script and session.target == str((workspace / "train.py").resolve())
    assert session._record_params()["args"] == ["--steps", "2"]
    assert "target" not in session._record_params() and "train" not in session._record_params()["options"]
    for flags in ({"train": True}, {"dynamic": True}):
        with pytest.raises(UserError, match="decides for itself"):
            WatchSession(WatchOptions("train.py", workspace=workspace, **flags), print)
    with pytest.raises(UserError, match="arguments after `--` are a script's"):
        WatchSession(WatchOptions("train.py:main", workspace=workspace, script_args=["--steps", "2"]), print)


def test_cli_refuses_train_for_a_script(run_cli, workspace):
    result = run_cli(["watch", "train.py", "--train", "--", "--steps", "2"], cwd=workspace)
    assert result.returncode == 2, result.stderr
    assert "--train: only for a factory (PATH.py:FACTORY); the script train.py decides for itself" in result.stderr
    result = run_cli(["tui", "train.py"], cwd=workspace)
    assert result.returncode == 2 and "the explorer records a factory" in result.stderr


def test_worker_rejects_invalid_script_params(workspace):
    store = str(workspace / ".kernelscope")
    requests = [
        {"target": "train.py:main", "script": "train.py", "store": store},  # both
        {"store": store},  # neither
        {"script": 3, "store": store},
        {"script": "train.py", "args": "--steps 2", "store": store},
        {"script": "train.py", "args": ["--steps", 2], "store": store},
        {"target": "train.py:main", "args": ["--steps"], "store": store},
        {"script": "train.py", "store": store, "options": {"train": True}},
        {"script": "train.py", "store": store, "options": {"world_size": "2"}},
        {"script": "train.py", "store": store, "options": {"steps": 2}},
    ]
    lines = [json.dumps({"jsonrpc": "2.0", "id": number, "method": "record", "params": params})
             for number, params in enumerate(requests, 1)]
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}))
    result = subprocess.run([sys.executable, "-m", "kernelscope.engine.worker"], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, timeout=120, cwd=workspace)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0, result.stderr
    assert [(a["id"], a.get("error", {}).get("code")) for a in answers] == \
        [(number, -32602) for number in range(1, len(requests) + 1)] + [(99, None)]
    assert "'train' and 'dynamic' are for a factory" in answers[6]["error"]["message"]
    assert not (workspace / ".kernelscope").exists()  # nothing was recorded


# -- a real session on a script -----------------------------------------------------------------------


def latest_run(store_root: Path, target: str) -> int | None:
    with StoreBackend(store_root, create=False) as store:
        return store.latest_run_id(target)


@pytest.mark.slow
def test_watching_a_script_records_each_save_and_reports_broken_ones(workspace):
    log = EventLog()
    store_root, script = workspace / ".kernelscope", workspace / "train.py"
    # virtual-cuda asked for: under `auto` a script whose tensors stay on the CPU compiles for the CPU
    session = WatchSession(WatchOptions("train.py", store=store_root, workspace=workspace, keep=2,
                                        device="virtual-cuda", quiet_seconds=0.2, script_args=["--steps", "2"]),
                           log)
    session.start()
    try:
        first = log.build_result(1)
        assert isinstance(first, BuildFinished), first
        assert first.target == "train.py" and first.graphs == 1  # named as `kernelscope run train.py` names it
        assert RELU in kernel_text(store_root, first.run_id)
        assert session.watched_files == sorted(str(workspace.resolve() / name) for name in ("helper.py", "train.py"))
        assert any(isinstance(e, WorkerOutput) and e.line == "script ran 2 step(s)" for e in log.events)

        # an edit of the script: a new op in the graph
        script.write_text(SCRIPT.replace("act(x * 2.0) + 1.0", "torch.tanh(x * 2.0) + 1.0"))
        second = log.build_result(2)
        assert isinstance(second, BuildFinished), second
        assert second.run_id > first.run_id and latest_run(store_root, "train.py") == second.run_id
        kernels = kernel_text(store_root, second.run_id)
        assert TANH in kernels and RELU not in kernels

        # an exception at a line: reported there, the last good run stays the latest
        broken = SCRIPT.replace("step = torch.compile(f)", "raise ValueError('no data today')")
        script.write_text(broken)
        raised = log.build_result(3)
        assert isinstance(raised, BuildFailed), raised
        assert (raised.kind, raised.file, raised.line) == ("target", str(script), line_of(broken, "no data today"))
        assert "ValueError: no data today" in raised.message and raised.last_good_run == second.run_id
        assert latest_run(store_root, "train.py") == second.run_id
        started = log.wait_for(lambda e: isinstance(e, BuildStarted) and e.build == 3)
        assert started.changed == [str(script.resolve())]

        # sys.exit with a status is a failure at its line; sys.exit(0) is a normal end
        exits = SCRIPT + "import sys\nsys.exit(2)\n"
        script.write_text(exits)
        exited = log.build_result(4)
        assert isinstance(exited, BuildFailed), exited
        assert (exited.file, exited.line) == (str(script), line_of(exits, "sys.exit(2)"))
        assert "exited with status 2" in exited.message
        script.write_text(exits.replace("sys.exit(2)", "sys.exit(0)"))
        ended = log.build_result(5)
        assert isinstance(ended, BuildFinished), ended

        # an edit of the workspace module the script imports: re-imported; keep=2 prunes the oldest
        (workspace / "helper.py").write_text(HELPER.replace("torch.relu(x)", "torch.sigmoid(x)"))
        sixth = log.build_result(6)
        assert isinstance(sixth, BuildFinished), sixth
        assert "tl.sigmoid" in kernel_text(store_root, sixth.run_id)
        with StoreBackend(store_root, create=False) as store:
            assert sorted(run.id for run in store.runs()) == [ended.run_id, sixth.run_id]
        assert sixth.pruned == [second.run_id]
    finally:
        session.stop()


@pytest.mark.slow
def test_cli_watch_passes_the_arguments_after_dashes_to_the_script(workspace):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelscope", "watch", "train.py", "--json", "--keep", "3", "--", "--steps", "3"],
        cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = threading.Timer(300, process.kill)  # never hang the test run
    deadline.start()
    try:
        events = []
        for line in process.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] in ("build_finished", "build_failed"):
                process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read()
    finally:
        deadline.cancel()
        if process.poll() is None:
            process.kill()
    finished = [event for event in events if event["event"] == "build_finished"]
    assert len(finished) == 1 and finished[0]["target"] == "train.py", events
    assert "script ran 3 step(s)" in stderr.splitlines()  # the script's output: stderr, off the JSON
    assert events[-1]["event"] == "stopped" and events[-1]["last_good_run"] == finished[0]["run_id"]
