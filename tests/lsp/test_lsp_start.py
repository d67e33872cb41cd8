"""How `python -m kernelscope lsp` starts: what it loads before answering `initialize`,
that serving never imports torch, and the cache of attrs' generated methods.

Each test runs the real server (or the real import) in a fresh interpreter, talking
JSON-RPC over its stdin/stdout. No timings here: bench/lsp_bench.py measures the start.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_support import REPO, line_of
from synthetic_runs import make_mlp_run

from kernelscope.store import StoreBackend

# Runs the server as `kernelscope lsp` does and, when it exits, writes which of the
# modules below it had loaded.
SERVER = """
import atexit, json, sys
def report():
    with open(sys.argv[1], "w") as out:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] == "torch" or m in (
            "kernelscope.store", "kernelscope.lsp.provenance", "kernelscope.lsp.index", "kernelscope.lsp.lines",
            "kernelscope.lsp.render", "kernelscope.lsp.compiler", "kernelscope.watch")), out)
atexit.register(report)
from kernelscope.cli import main
sys.exit(main(["lsp"]))
"""


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_answers(stdout: bytes) -> dict:
    """The responses in the server's output, by id."""
    answers = {}
    while stdout:
        header, _, rest = stdout.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        message = json.loads(rest[:length])
        if "id" in message and "method" not in message:
            answers[message["id"]] = message
        stdout = rest[length:]
    return answers


def serve(workspace: Path, messages: list[dict], tmp_path: Path, env: dict | None = None) -> tuple[dict, list]:
    """Run the server on `messages` (then end of input); (answers by id, modules it had loaded)."""
    report = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", SERVER, str(report)], input=b"".join(frame(m) for m in messages), cwd=workspace,
        capture_output=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO), **(env or {})))
    assert result.returncode == 0, result.stderr.decode()
    return read_answers(result.stdout), json.loads(report.read_text())


def initialize(workspace: Path) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}}


@pytest.fixture
def synthetic(tmp_path):
    workspace = tmp_path / "workspace"
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
    return workspace


def test_initialize_is_answered_before_the_store_side_loads(synthetic, tmp_path):
    answers, loaded = serve(synthetic, [initialize(synthetic)], tmp_path)
    capabilities = answers[1]["result"]["capabilities"]
    assert capabilities["hoverProvider"] and capabilities["definitionProvider"]
    assert "kernelscope.compile" in capabilities["executeCommandProvider"]["commands"]
    assert loaded == []


def test_serving_requests_loads_the_store_and_never_torch(synthetic, tmp_path):
    source = synthetic / "examples" / "mlp.py"
    document = {"uri": source.as_uri()}
    position = {"line": line_of(source, "gelu(h)"), "character": 4}
    answers, loaded = serve(synthetic, [
        initialize(synthetic),
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            **document, "languageId": "python", "version": 1, "text": source.read_text()}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": document,
                                                                               "position": position}},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/definition", "params": {"textDocument": document,
                                                                                    "position": position}},
        {"jsonrpc": "2.0", "id": 4, "method": "textDocument/references", "params": {
            "textDocument": document, "position": position, "context": {"includeDeclaration": False}}},
        {"jsonrpc": "2.0", "id": 5, "method": "textDocument/codeLens", "params": {"textDocument": document}},
        {"jsonrpc": "2.0", "id": 6, "method": "workspace/executeCommand", "params": {
            "command": "kernelscope.runs", "arguments": []}},
        {"jsonrpc": "2.0", "id": 7, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ], tmp_path)
    assert "triton_poi_fused_gelu" in answers[2]["result"]["contents"]["value"]
    assert answers[3]["result"] and answers[4]["result"] and answers[5]["result"]
    assert len(answers[6]["result"]["runs"]) == 1
    assert not [name for name in loaded if name.split(".")[0] == "torch"]
    assert {"kernelscope.store", "kernelscope.lsp.provenance"} <= set(loaded)


# The attrs classes of lsprotocol, imported through the cache; prints how many attrs
# methods were compiled and how the classes behave.
IMPORT_TYPES = """
import builtins, json
real_compile = builtins.compile
compiled = []
def counting_compile(source, filename, *args, **kwargs):
    if str(filename).startswith("<attrs generated") and "lsprotocol." in str(filename):
        compiled.append(filename)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
from kernelscope.lsp.attrs_cache import cache_path, compiled_once
with compiled_once():
    from lsprotocol import types
compiled_in_block = len(compiled)
from lsprotocol.converters import get_converter
position = types.Position(line=1, character=2)
hover = get_converter().structure({"contents": {"kind": "markdown", "value": "x"},
                                   "range": {"start": {"line": 0, "character": 0},
                                             "end": {"line": 0, "character": 3}}}, types.Hover)
print(json.dumps({
    "compiled": compiled_in_block, "cache": str(cache_path()),
    "equal": position == types.Position(1, 2), "differs": position != types.Position(1, 3),
    "repr": repr(types.MarkupContent(kind=types.MarkupKind.Markdown, value="x")),
    "value": hover.contents.value, "end": hover.range.end.character, "slots": hasattr(types.Position, "__slots__"),
}))
"""


def _import_types(cache_dir: Path) -> dict:
    result = subprocess.run([sys.executable, "-c", IMPORT_TYPES], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(REPO), KERNELSCOPE_CACHE_DIR=str(cache_dir)))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_attrs_methods_are_compiled_once_and_the_classes_are_the_same(tmp_path):
    cache_dir = tmp_path / "cache"
    first = _import_types(cache_dir)
    assert first["compiled"] > 500  # lsprotocol's classes, compiled and written to the cache
    assert Path(first["cache"]).parent == cache_dir and Path(first["cache"]).is_file()
    written = Path(first["cache"]).stat().st_mtime_ns
    second = _import_types(cache_dir)
    assert second["compiled"] == 0
    assert Path(first["cache"]).stat().st_mtime_ns == written  # nothing new: not written again
    behaviour = {key: value for key, value in first.items() if key not in ("compiled", "cache")}
    assert behaviour == {key: value for key, value in second.items() if key not in ("compiled", "cache")}
    assert behaviour == {"equal": True, "differs": True, "value": "x", "end": 3, "slots": True,
                         "repr": "MarkupContent(kind=<MarkupKind.Markdown: 'markdown'>, value='x')"}
    Path(first["cache"]).write_bytes(b"not a marshal file")  # damaged: compiles as usual and rewrites it
    third = _import_types(cache_dir)
    assert third["compiled"] == first["compiled"]
    assert _import_types(cache_dir)["compiled"] == 0


def test_server_starts_with_a_cache_folder_it_cannot_write(synthetic, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # the cache folder would be below a file: no cache
    answers, _ = serve(synthetic, [initialize(synthetic)], tmp_path, env={"KERNELSCOPE_CACHE_DIR": str(blocked / "x")})
    assert answers[1]["result"]["capabilities"]["hoverProvider"]
