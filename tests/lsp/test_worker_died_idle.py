"""A worker that died while idle, just after the front end last saw it alive, is replaced
without failing the compile it was about to get (found by the fault campaign: a SIGKILL
that landed on an idle worker made the next compile fail under the language server).

The race is made deterministic: the worker is killed and reaped, and the client is told it
still lives for one look, as it would be in the moment between the kill and its delivery."""
from __future__ import annotations

import os
import shutil
import signal

import pytest
from conftest import EXAMPLES


@pytest.mark.slow
def test_a_compile_sent_to_a_dead_worker_runs_in_a_new_one(tmp_path, monkeypatch):
    from kernelscope.lsp.compiler import Compiler
    from kernelscope.lsp.targets import CompileTarget
    from kernelscope.watch.worker_client import WorkerClient

    shutil.copy(EXAMPLES / "function.py", tmp_path / "model.py")
    compiler = Compiler(tmp_path)
    target = CompileTarget("model.py:make", "virtual-cuda", False, False, "test")
    restarts = []
    try:
        first = compiler.compile(target, tmp_path / ".kernelscope", None, 300, on_restart=restarts.append)
        pid = compiler.worker_pid
        os.kill(pid, signal.SIGKILL)
        compiler._client._process.wait()  # dead and reaped
        looks = iter([True])
        monkeypatch.setattr(WorkerClient, "alive", property(lambda self: next(looks, self._process.poll() is None)))
        second = compiler.compile(target, tmp_path / ".kernelscope", None, 300, on_restart=restarts.append)
    finally:
        compiler.stop()
    assert second.run_id == first.run_id + 1
    assert any("ended (killed by SIGKILL) before the compile reached it" in note for note in restarts), restarts
