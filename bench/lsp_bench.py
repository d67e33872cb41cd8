"""Language-server latency on a large store: `python bench/lsp_bench.py`.

Records a real model once (GPT-2 from bench/models, training: forward and backward),
replicates its graphs into one run until the store holds at least --kernels kernels
(each group of --layers replicas gets its own copy of the source files, as the layers
of a deep model share their block's lines), then starts `python -m kernelscope lsp`
on it and times, over stdio JSON-RPC as an editor sends it:
- server start to the `initialize` answer (then `initialized` is sent): the first
  start with an empty cache of attrs' generated methods (kernelscope/lsp/attrs_cache.py,
  a fresh folder per bench run) apart, the median of the others; kernelscope's
  bytecode is compiled beforehand, as an installed package has it; `initialize`
  carries VS Code's capabilities (pytest-lsp's recording) as an editor sends them;
- opening a model file (`didOpen`, which indexes the file in the background) and
  the first hover right after it, which waits for that index: the cold cost;
- then hover, definition and references on model lines and on kernel lines, each
  line asked once per kind.
Prints p50/p99 per request kind. Targets: p99 <= 10 ms, start <= 0.5 s.
"""
from __future__ import annotations

import argparse
import compileall
import dataclasses
import importlib.util
import json
import os
import pickle
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelscope.run_record import SourceLocation  # noqa: E402
from kernelscope.store import StoreBackend  # noqa: E402


def record(spec: str, device: str, train: bool):
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kernelscope.engine.recorder import RecordOptions, record_factory

    return record_factory(spec, RecordOptions(device=device, train=train, workspace=REPO))


def _remap(value, mapping):
    """A copy of a record with every SourceLocation's file replaced through `mapping`."""
    if isinstance(value, SourceLocation):
        return dataclasses.replace(value, file=mapping.get(value.file, value.file))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _remap(getattr(value, f.name), mapping) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, list):
        return [_remap(item, mapping) for item in value]
    if isinstance(value, dict):
        return {key: _remap(item, mapping) for key, item in value.items()}
    return value


def source_files(run) -> set[str]:
    files = set()

    def visit(value):
        if isinstance(value, SourceLocation):
            files.add(value.file)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                visit(getattr(value, f.name))
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(run.graphs)
    return {file for file in files if not file.startswith("<")}


def _copy_sources(run, folder: Path) -> None:
    """Keep the recorded source files beside a pickled recording (another machine lacks them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for file in source_files(run):
        path = Path(file) if Path(file).is_absolute() else REPO / file
        shutil.copyfile(path, folder / path.name)


def _relocate(run, record_file: str) -> None:
    """Point a pickled recording's source files at the copies beside it."""
    global REPO_SOURCES
    REPO_SOURCES = Path(record_file).resolve().parent / "sources"


REPO_SOURCES: Path | None = None


def replicate(run, workspace: Path, min_kernels: int, layers: int):
    """One run with the graphs of `run` copied until it has `min_kernels` kernels."""
    per_copy = sum(len(graph.kernels) for graph in run.graphs)
    copies = -(-min_kernels // per_copy)
    originals = sorted(source_files(run))
    graphs = []
    for copy in range(copies):
        group = copy // layers
        mapping = {}
        for file in originals:
            path = Path(file) if Path(file).is_absolute() else REPO / file
            if REPO_SOURCES is not None:
                path = REPO_SOURCES / path.name
            target = workspace / "model" / f"group_{group:03d}" / path.name
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            mapping[file] = str(target)
        for graph in run.graphs:
            graphs.append(dataclasses.replace(_remap(graph, mapping), frame_id=copy))
    return dataclasses.replace(run, graphs=graphs, graph_breaks=[], recompiles=[], workspace=str(workspace),
                               target="model/group_000/gpt2.py:make_train"), copies


class Client:
    """A minimal LSP client over stdio (Content-Length framing), timing each request."""

    def __init__(self, command: list[str], cwd: Path):
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self._answers: dict[int, tuple[float, dict]] = {}
        self._cond = threading.Condition()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.process.stdout
        while True:
            length = None
            while True:
                header = stream.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            message = json.loads(stream.read(length))
            arrived = time.perf_counter()
            if "id" in message and "method" not in message:
                with self._cond:
                    self._answers[message["id"]] = (arrived, message)
                    self._cond.notify_all()
            elif "id" in message:  # a request from the server (refresh, progress): answer it
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def _send(self, message: dict):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params) -> tuple[float, dict]:
        """(seconds from send to answer, the answer)."""
        self._next += 1
        request_id = self._next
        started = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with self._cond:
            while request_id not in self._answers:
                self._cond.wait(30)
            arrived, message = self._answers.pop(request_id)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return arrived - started, message

    def notify(self, method: str, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def editor_initialize() -> tuple[str, dict]:
    """(who, the clientInfo and capabilities an editor sends in `initialize`): VS Code's, as
    pytest-lsp recorded them (a real editor's ~5 KB of capabilities, which the server parses
    before answering), else none."""
    spec = importlib.util.find_spec("pytest_lsp")
    recordings = sorted(Path(spec.submodule_search_locations[0], "clients").glob("visual_studio_code_v*.json")) \
        if spec is not None else []
    if not recordings:
        return "an empty client (pytest-lsp's recorded capabilities not installed)", {"capabilities": {}}
    recorded = json.loads(recordings[-1].read_text())
    info = recorded["clientInfo"]
    return f"{info['name']} {info['version']}", {"clientInfo": info, "capabilities": recorded["capabilities"]}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=str(REPO / "bench/models/gpt2.py") + ":make_train")
    parser.add_argument("--device", default="virtual-cuda")
    parser.add_argument("--kernels", type=int, default=10_000, help="at least this many kernels in the store")
    parser.add_argument("--layers", type=int, default=12, help="replicas sharing one copy of the source files")
    parser.add_argument("--requests", type=int, default=300, help="requests per kind")
    parser.add_argument("--starts", type=int, default=10, help="server starts to time")
    parser.add_argument("--keep", metavar="DIR", help="build the workspace here and keep it")
    parser.add_argument("--save-record", metavar="FILE", help="also pickle the recording here (then stop)")
    parser.add_argument("--load-record", metavar="FILE",
                        help="use a pickled recording instead of recording (a machine without torch)")
    args = parser.parse_args()

    workspace = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kernelscope-lsp-bench-"))
    store_dir = workspace / ".kernelscope"
    if not (store_dir / "kernelscope.sqlite").exists():
        started = time.perf_counter()
        if args.load_record:
            with open(args.load_record, "rb") as file:
                run = pickle.load(file)
            _relocate(run, args.load_record)
        else:
            run = record(args.target, args.device, train=True)
        recorded = time.perf_counter() - started
        if args.save_record:
            _copy_sources(run, Path(args.save_record).parent / "sources")
            with open(args.save_record, "wb") as file:
                pickle.dump(run, file)
            print(f"pickled the recording to {args.save_record}")
            return 0
        big, copies = replicate(run, workspace, args.kernels, args.layers)
        started = time.perf_counter()
        with StoreBackend(store_dir) as store:
            store.write_run(big)
        print(f"recorded {args.target} ({args.device}, train) in {recorded:.1f}s; "
              f"{copies} copies written in {time.perf_counter() - started:.1f}s")
    with StoreBackend(store_dir, create=False) as store:
        run_id = store.latest_run_id()
        conn = store.conn
        kernels = conn.execute("SELECT COUNT(*) FROM kernels WHERE run_id = ?", (run_id,)).fetchone()[0]
        links = conn.execute("SELECT COUNT(*) FROM generated_lines WHERE run_id = ?", (run_id,)).fetchone()[0]
        nodes = conn.execute("SELECT COUNT(*) FROM nodes WHERE run_id = ?", (run_id,)).fetchone()[0]
        source_lines = conn.execute(
            "SELECT DISTINCT source_file, source_line FROM nodes WHERE run_id = ? AND source_file LIKE 'model/%'",
            (run_id,)).fetchall()
        kernel_lines = conn.execute(
            "SELECT file, line FROM generated_lines WHERE run_id = ? AND kernel_id IS NOT NULL "
            "AND reason NOT LIKE 'shared:%' GROUP BY file, line", (run_id,)).fetchall()
    size_mb = (store_dir / "kernelscope.sqlite").stat().st_size / 1e6
    print(f"store: {kernels} kernels, {links} line links, {nodes} nodes, {size_mb:.0f} MB database", flush=True)

    command = [sys.executable, "-m", "kernelscope", "lsp"]
    init = {"processId": os.getpid(), "rootUri": workspace.as_uri(), "capabilities": {},
            "initializationOptions": {"store": str(store_dir)}}
    compileall.compile_dir(REPO / "kernelscope", quiet=1)  # the .pyc files pip install writes
    attrs_cache = workspace / "attrs-cache"
    shutil.rmtree(attrs_cache, ignore_errors=True)
    os.environ["KERNELSCOPE_CACHE_DIR"] = str(attrs_cache)  # the servers started below inherit it
    editor, sent = editor_initialize()
    starts, start_cpu = [], []
    for _ in range(args.starts):
        started = time.perf_counter()
        client = Client(command, workspace)
        client.request("initialize", {**init, **sent})
        starts.append(time.perf_counter() - started)
        start_cpu.append(_cpu_seconds(client.process.pid))
        client.notify("initialized", {})
        client.close()

    rng = random.Random(0)
    client = Client(command, workspace)
    client.request("initialize", init)
    client.notify("initialized", {})
    samples = {}
    model_positions = rng.sample(source_lines, min(args.requests, len(source_lines)))
    first_line_of: dict[str, int] = {}
    for file, line in model_positions:
        first_line_of.setdefault(file, line)
    cold = []
    for file, line in first_line_of.items():
        path = workspace / file
        client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python",
                                                                "version": 1, "text": path.read_text()}})
        seconds, _ = client.request("textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                                           "position": {"line": line - 1, "character": 4}})
        cold.append(seconds)
    kernel_positions = rng.sample(kernel_lines, min(args.requests, len(kernel_lines)))
    answered = {}
    slowest = (0.0, "", "", "")
    for kind, positions, root in (("model line", model_positions, workspace), ("kernel line", kernel_positions,
                                                                                store_dir)):
        for method, name in (("textDocument/hover", "hover"), ("textDocument/definition", "definition"),
                             ("textDocument/references", "references")):
            times, hits = [], 0
            for file, line in positions:
                params = {"textDocument": {"uri": (root / file).as_uri()},
                          "position": {"line": line - 1, "character": 4}}
                if method == "textDocument/references":
                    params["context"] = {"includeDeclaration": False}
                seconds, message = client.request(method, params)
                times.append(seconds)
                slowest = max(slowest, (seconds, name, kind, f"{file}:{line}"))
                hits += message.get("result") not in (None, [])
            samples[(kind, name)] = times
            answered[(kind, name)] = hits
    client.close()

    warm = starts[1:] or starts
    print(f"\nserver start to `initialize` answered: median {statistics.median(warm) * 1000:.0f} ms, "
          f"max {max(warm) * 1000:.0f} ms over {len(warm)} starts (target <= 500 ms); "
          f"CPU time of the server until then: median {statistics.median(start_cpu[1:] or start_cpu) * 1000:.0f} ms "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); the first start, which "
          f"compiled attrs' methods and wrote their cache: {starts[0] * 1000:.0f} ms; `initialize` as {editor} "
          f"sends it")
    print(f"opening a model file, then the first hover in it (waits for the file's index): "
          f"median {statistics.median(cold) * 1000:.0f} ms, max {max(cold) * 1000:.0f} ms over {len(cold)} files")
    print("\n| request | on | n | answered | p50 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for (kind, name), times in samples.items():
        print(f"| {name} | {kind} | {len(times)} | {answered[(kind, name)]} | {percentile(times, 0.5) * 1000:.1f} ms "
              f"| {percentile(times, 0.99) * 1000:.1f} ms | {max(times) * 1000:.1f} ms |")
    worst = max(percentile(times, 0.99) for times in samples.values())
    print(f"\nslowest request: {slowest[1]} on {slowest[2]} {slowest[3]}, {slowest[0] * 1000:.1f} ms")
    print(f"\nworst p99 {worst * 1000:.1f} ms (target <= 10 ms)")
    if not args.keep:
        shutil.rmtree(workspace, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
