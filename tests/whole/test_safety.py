"""The language server speaks only stdio (issue 20): after it has answered requests, read
a store, compiled in its engine worker and watched files, neither it nor its worker has a
network socket or any listening socket — only unnamed socket pairs (asyncio's own wake-up
pipe) and pipes. The other safety checks live beside the code they check:
tests/lsp/test_lsp.py (workspace code never runs on open or hover), tests/trace_import/test_import.py
(logs are never executed and never write outside the store), vscode-extension/test/
overview.test.ts (the webview's content security policy)."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from synthetic_runs import GELU_LINE, make_mlp_run

from kernelscope.store import StoreBackend


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _inet_sockets(inodes: set[str]) -> list[str]:
    found = []
    for table in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6"):
        path = Path(f"/proc/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                found.append(f"{table}: {line.strip()}")
    return found


def _named_or_listening_unix(inodes: set[str]) -> list[str]:
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 7 and fields[6] in inodes:
            listening = fields[5] == "01"  # state SS_UNCONNECTED with __SO_ACCEPTCON is listening
            flags = int(fields[3], 16)
            if len(fields) > 7 or listening or flags & 0x10000:
                found.append(line.strip())
    return found


@pytest.mark.slow
async def test_the_language_server_and_its_worker_speak_only_stdio(tmp_path):
    from lsp_support import start_session, uri

    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(make_mlp_run(tmp_path))
    model = tmp_path / "examples" / "mlp.py"
    model.write_text(model.read_text() + "\n\ndef factory():\n    return MLP(), (torch.randn(8, 32),)\n")
    session = await start_session(tmp_path, {"deviceTarget": "cpu-triton"})
    try:
        session.open(model)
        assert await session.hover(model, GELU_LINE - 1) is not None
        await session.lenses(uri(model))
        await session.command("kernelscope.compile", {"target": "examples/mlp.py:factory"})
        await session.command("kernelscope.toggleWatch", {"target": "examples/mlp.py:factory"})
        await asyncio.sleep(1.0)
        server = session.client._server.pid
        processes = [server] + [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                                and _parent(p) == server]
        assert len(processes) >= 2, "the engine worker should be running"
        for pid in processes:
            inodes = _socket_inodes(pid)
            assert _inet_sockets(inodes) == [], f"process {pid} has a network socket"
            assert _named_or_listening_unix(inodes) == [], f"process {pid} has a named or listening socket"
        await session.command("kernelscope.toggleWatch", {})
    finally:
        await session.stop()


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
