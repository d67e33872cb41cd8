"""Fuzzing with hypothesis: malformed input into every door a user's data comes through.

- `lsp`: malformed and out-of-range LSP messages into a running `kernelscope lsp` over
  stdio (random JSON as parameters, out-of-range positions, odd URIs, bodies that are
  not JSON, unknown methods); after each input the server must answer a request within
  10 s (else a hang) and still be running (else a crash);
- `trace_log`: TORCH_TRACE logs truncated, with lines dropped, repeated or swapped, bytes
  flipped and random JSON as records, imported (and strict-imported) and stored;
- `profile_trace`: random JSON, bytes and mangled chrome-trace events to `kernelscope profile`;
- `file_line`: odd `FILE:LINE` strings to `kernelscope query`;
- `store_bytes`: random bytes, and a real store's database with bytes flipped or cut, as a
  store, through `runs`, `show`, `query`, `dump` and `doctor`;
- `crafted_store`: a valid store whose rows were crafted (generated-file paths that climb
  out with `..`, absolute ones, a symlink out of the store, odd names, SQL values of the
  wrong type, huge and negative line numbers, invalid JSON) through `runs`, `show`,
  `query` (model, kernel and wrapper lines), `dump`, `diff`, `doctor`, `merge` and the
  language server's document and hover reads. Besides crashes it counts reads outside:
  a file opened under the directory beside the store that the crafted paths point into
  (seen by an audit hook on `open`).
A crash: an exception other than kernelscope's own errors, an "internal error" (exit 70),
or a dead server. A traceback shown: one in anything the user reads (the CLI's output,
an LSP response or message, the server's log).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from faults.common import REPO

HANG_SECONDS = 10.0


@dataclass
class FuzzTally:
    inputs: int = 0
    crashes: int = 0
    hangs: int = 0
    tracebacks: int = 0
    reads_outside: int = 0
    by_target: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def problem(self, kind: str, target: str, detail: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.problems) < 20:
            self.problems.append(f"{target}: {kind.rstrip('s').replace('crashe', 'crash')}: {detail[:300]}")


def run(examples: int = 100, seed_value: int = 20) -> dict:
    tally = FuzzTally()
    work = Path(tempfile.mkdtemp(prefix="kernelscope-fuzz-"))
    try:
        store = _synthetic_store(work / "ws")
        for name, target in (("file_line", _file_line), ("store_bytes", _store_bytes),
                             ("crafted_store", _crafted_store), ("trace_log", _trace_log),
                             ("profile_trace", _profile_trace), ("lsp", _lsp)):
            before = tally.inputs
            target(tally, work, store, examples, seed_value)
            tally.by_target[name] = tally.inputs - before
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"inputs": tally.inputs, "crashes": tally.crashes, "hangs": tally.hangs, "tracebacks": tally.tracebacks,
            "reads_outside": tally.reads_outside, "by_target": tally.by_target, "problems": tally.problems}


def _given(strategy, examples: int, seed_value: int):
    """Run the decorated body on `examples` inputs drawn from `strategy` (it never raises)."""
    def decorate(body):
        test = seed(seed_value)(settings(max_examples=examples, deadline=None, database=None, print_blob=False,
                                         suppress_health_check=list(HealthCheck))(given(strategy)(body)))
        test()
        return body
    return decorate


def _synthetic_store(workspace: Path) -> Path:
    from synthetic_runs import make_mlp_run

    from kernelscope.store import StoreBackend

    workspace.mkdir(parents=True)
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
    return workspace / ".kernelscope"


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cli(tally: FuzzTally, target: str, args: list[str], allowed: set[int], cwd: Path | None = None) -> None:
    """`kernelscope ARGS` in this process; a crash is an exit code outside `allowed`, an
    exception, or a traceback in what it printed."""
    from kernelscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    tally.inputs += 1
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with _time_limit(HANG_SECONDS * 3), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:  # argparse's own usage errors
                code = exit_.code if isinstance(exit_.code, int) else 2
    except _Hang:
        tally.problem("hangs", target, repr(args))
        return
    except BaseException as error:  # noqa: BLE001 - anything escaping main is a crash
        tally.problem("crashes", target, f"{type(error).__name__}: {error} for {args!r}")
        return
    finally:
        os.chdir(previous)
    text = out.getvalue() + err.getvalue()
    if "Traceback (most recent call last)" in text:
        tally.problem("tracebacks", target, repr(args))
    if code not in allowed:
        tally.problem("crashes", target, f"exit {code} for {args!r}: {err.getvalue().strip()[-300:]}")


# -- FILE:LINE -----------------------------------------------------------------------------------

_PATHS = st.sampled_from([
    "examples/mlp.py", "./examples/mlp.py", "examples//mlp.py", "runs/1/graphs/0_0_0-forward/wrapper.py",
    ".kernelscope/runs/1/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py", "runs/999/x.py", "/etc/passwd",
    "/", "", "~", "..", "../../../etc/passwd", "examples/", "nonexistent.py", "C:\\model.py", "file:///x.py",
    "examples/mlp.py:12", "runs/1/../../../x.py", "\x00", "examples/\x00mlp.py", "ex\u00e9mples/ml\u00fe.py",
    " examples/mlp.py ", "\udcff.py", "examples/mlp.py\n", "-x", "--store",
]) | st.text(max_size=40) | st.text(alphabet=st.sampled_from("/.:\x00\\~ -_ab1"), max_size=20)
_LINES = st.integers(1, 40).map(str) | st.integers(-(2 ** 70), 2 ** 70).map(str) \
    | st.text(alphabet="0123456789-+ .eE_x\u0663", max_size=12) | st.text(max_size=10)


def _file_line(tally, work, store, examples, seed_value) -> None:
    texts = st.builds(lambda path, line: f"{path}:{line}", _PATHS, _LINES) | st.text(max_size=60)
    options = st.sampled_from([[], ["--direction", "up"], ["--json"], ["--detail"], ["--run", "1"],
                               ["--module", "fc1"], ["--run", "7"]])

    @_given(st.tuples(texts, options), examples, seed_value)
    def body(case):
        text, extra = case
        _cli(tally, "file_line", ["query", text, "--store", str(store), *extra], {0, 2, 5}, cwd=store.parent)


# -- bytes as a store -----------------------------------------------------------------------------


def _store_bytes(tally, work, store, examples, seed_value) -> None:
    valid = (store / "kernelscope.sqlite").read_bytes()
    with contextlib.suppress(Exception):
        import sqlite3

        conn = sqlite3.connect(store / "kernelscope.sqlite")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        valid = (store / "kernelscope.sqlite").read_bytes()
    flips = st.lists(st.tuples(st.integers(0, len(valid) - 1), st.integers(0, 255)), min_size=1, max_size=12)
    mutated = st.builds(lambda changes, cut: _mutate(valid, changes, cut), flips,
                        st.none() | st.integers(0, len(valid)))
    contents = st.binary(max_size=4096) | mutated | st.just(b"") | st.just(b"SQLite format 3\x00")
    counter = iter(range(10 ** 9))

    @_given(contents, examples, seed_value)
    def body(data):
        root = work / f"bytes-{next(counter)}" / ".kernelscope"
        root.mkdir(parents=True)
        (root / "kernelscope.sqlite").write_bytes(data)
        for args in (["runs"], ["show"], ["query", "examples/mlp.py:13"], ["dump"], ["doctor"]):
            _cli(tally, "store_bytes", [*args, "--store", str(root)], {0, 5})
        shutil.rmtree(root.parent, ignore_errors=True)


# -- crafted stores ---------------------------------------------------------------------------

class _OpenedPaths:
    """Paths this process opens while `watching` (a `sys.addaudithook` hook: it cannot be
    removed, so it is installed once and records only while switched on)."""

    installed = False
    watching = False
    seen: list[str] = []

    @classmethod
    def start(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True
        cls.seen, cls.watching = [], True

    @classmethod
    def stop(cls) -> list[str]:
        cls.watching = False
        return cls.seen

    @classmethod
    def _hook(cls, event: str, args: tuple) -> None:
        if cls.watching and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            cls.seen.append(os.fsdecode(args[0]))


_OUTSIDE = "outside-the-store"  # a directory beside the store holding a file the crafted paths name
_ESCAPES = [f"../{_OUTSIDE}/secret.py", f"../../{_OUTSIDE}/secret.py", f"runs/1/../../{_OUTSIDE}/secret.py",
            f"runs/1/graphs/../../../{_OUTSIDE}/secret.py", "{outside}/secret.py", "runs/1/link-out/secret.py",
            "runs\\..\\..\\secret.py", "/etc/passwd", "C:/Windows/win.ini"]
_ODD = st.sampled_from(["", "\x00", "x" * 5000, "'; DROP TABLE runs; --", "../../x", "\udcff", "ü/ß", "%s%n", "null",
                        "{", "[1, 2", '{"a": }', "runs/1", "."]) | st.text(max_size=30)
_NUMBERS = st.sampled_from([0, -1, 2 ** 31, 2 ** 62, -(2 ** 62), "abc", "1e9", None, 1.5]) | st.integers()
# (table, column, values): what a crafted store may hold in place of what kernelscope wrote
_CRAFTS = [
    ("files", "path", st.sampled_from(_ESCAPES)),
    ("generated_lines", "file", st.sampled_from(_ESCAPES)),
    ("asm_files", "path", st.sampled_from(_ESCAPES)),
    ("generated_lines", "line", _NUMBERS),
    ("nodes", "source_line", _NUMBERS),
    ("nodes", "graph_line", _NUMBERS),
    ("files", "line_count", _NUMBERS),
    ("kernels", "name", _ODD),
    ("kernels", "file", st.sampled_from(_ESCAPES) | _ODD),
    ("nodes", "name", _ODD),
    ("nodes", "source_file", _ODD),
    ("graphs", "key", _ODD),
    ("runs", "workspace", _ODD),
    ("runs", "config_json", _ODD),
    ("runs", "coverage_json", _ODD),
    ("runs", "timings_json", _ODD),
    ("nodes", "lineage_json", _ODD),
]


def _crafted_store(tally, work, store, examples, seed_value) -> None:
    import sqlite3

    workspace = store.parent
    crafts = st.lists(st.tuples(st.sampled_from(range(len(_CRAFTS))), st.data()), min_size=1, max_size=4)
    counter = iter(range(10 ** 9))

    @_given(crafts, examples, seed_value)
    def body(chosen):
        case = work / f"crafted-{next(counter)}"
        shutil.copytree(workspace, case / "ws", symlinks=True)
        outside = case / _OUTSIDE
        outside.mkdir()
        (outside / "secret.py").write_text("SECRET = 1\n")
        root = case / "ws" / ".kernelscope"
        (root / "runs" / "1" / "link-out").symlink_to(outside, target_is_directory=True)
        conn = sqlite3.connect(root / "kernelscope.sqlite", isolation_level=None)
        conn.execute("PRAGMA foreign_keys = OFF")
        for index, data in chosen:
            table, column, values = _CRAFTS[index]
            value = data.draw(values)
            if isinstance(value, str):
                value = value.replace("{outside}", str(outside))
            with contextlib.suppress(sqlite3.Error, UnicodeEncodeError, OverflowError):  # not storable in SQLite
                rowid = conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET "
                                     f"{data.draw(st.integers(0, 40))} % MAX(1, (SELECT COUNT(*) FROM {table}))"
                                     ).fetchone()
                if rowid is not None:
                    conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, rowid[0]))
        conn.close()
        kernel = next(iter(sorted((root / "runs" / "1").rglob("kernels/*.py"))), None)
        wrapper = next(iter(sorted((root / "runs" / "1").rglob("wrapper.py"))), None)
        commands = [["runs"], ["show", "1"], ["query", "examples/mlp.py:13"], ["dump"], ["diff", "1", "1"],
                    ["doctor"], ["query", f"{_OUTSIDE}/secret.py:1"]]
        commands += [["query", f"{path.relative_to(case / 'ws')}:3"] for path in (kernel, wrapper) if path]
        _OpenedPaths.start()
        try:
            for args in commands:
                _cli(tally, "crafted_store", [*args, "--store", str(root)], {0, 1, 2, 5}, cwd=case / "ws")
            merged = case / "merged"
            _cli(tally, "crafted_store", ["merge", str(root), "--store", str(merged / ".kernelscope")], {0, 2, 5},
                 cwd=case / "ws")
            _lsp_reads(tally, case / "ws", root, [path for path in (kernel, wrapper) if path])
        finally:
            opened = _OpenedPaths.stop()
        leaked = sorted({path for path in opened if _OUTSIDE in path})
        if leaked:
            tally.problem("reads_outside", "crafted_store", f"opened {leaked[:3]} after {chosen!r}")
        shutil.rmtree(case, ignore_errors=True)


def _lsp_reads(tally, workspace: Path, root: Path, generated: list[Path]) -> None:
    """What the language server reads for a document and a hover, through its own
    Provenance (in this process, so the audit hook sees every open)."""
    from pygls.uris import from_fs_path

    from kernelscope.errors import UserError
    from kernelscope.lsp.provenance import Provenance

    tally.inputs += 1
    provenance = Provenance(workspace, root)
    try:
        for path in [workspace / "examples" / "mlp.py", *generated]:
            document = provenance.document(from_fs_path(str(path)))
            if document is not None:
                for line in range(1, min(len(document.lines), 40) + 1):
                    for stored in _stored_paths(provenance.query(document, line, "both")):
                        with contextlib.suppress(UserError):  # a path out of the store: refused
                            provenance.uri_for(stored)
    except UserError:
        pass
    except Exception as error:  # noqa: BLE001 - the server answers it as an error; a crash unless the store's
        store = provenance.store()
        if store is None or store.damage_behind(error) is None:
            tally.problem("crashes", "crafted_store", f"language server reads: {type(error).__name__}: {error}")


def _stored_paths(answer, depth: int = 0) -> set[str]:
    """Every `file`/`path` string in an answer (its dataclasses, lists and dicts), as the
    language server turns them into links."""
    import dataclasses

    found: set[str] = set()
    if depth > 8:
        return found
    if dataclasses.is_dataclass(answer):
        for item in dataclasses.fields(answer):
            value = getattr(answer, item.name)
            if item.name in ("file", "path", "kernel_file") and isinstance(value, str):
                found.add(value)
            else:
                found |= _stored_paths(value, depth + 1)
    elif isinstance(answer, (list, tuple)):
        for value in answer:
            found |= _stored_paths(value, depth + 1)
    elif isinstance(answer, dict):
        for value in answer.values():
            found |= _stored_paths(value, depth + 1)
    return found


def _mutate(data: bytes, changes: list[tuple[int, int]], cut: int | None) -> bytes:
    buffer = bytearray(data)
    for offset, value in changes:
        buffer[offset] = value
    return bytes(buffer[:cut] if cut is not None else buffer)


# -- TORCH_TRACE logs ------------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2 ** 64), 2 ** 64) | st.floats(allow_nan=False)
                     | st.text(max_size=20),
                     lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children,
                                                                                         max_size=4),
                     max_leaves=12)


def _trace_log(tally, work, store, examples, seed_value) -> None:
    from trace_logs import compile_records, trace_line

    from kernelscope.errors import UserError
    from kernelscope.store import StoreBackend
    from kernelscope.trace_import import ImportOptions, import_log

    base = compile_records() + compile_records(frame=1)
    text = "".join(base)
    record_keys = st.sampled_from(["artifact", "inductor_output_code", "dynamo_start", "str", "chromium_event",
                                   "dump_file", "graph_break", "compilation_metrics", "frame_id", "rank"])
    random_record = st.builds(lambda key, value, payload: trace_line({key: value, "frame_id": 0,
                                                                     "frame_compile_id": 0, "attempt": 0}, payload),
                              record_keys, _JSON, st.none() | st.text(max_size=200))
    edits = st.one_of(
        st.integers(0, len(text)).map(lambda cut: text[:cut]),
        st.lists(st.integers(0, len(base) - 1), max_size=len(base) * 2).map(
            lambda order: "".join(base[i] for i in order)),
        st.lists(st.tuples(st.integers(0, len(text) - 1), st.characters()), min_size=1, max_size=10).map(
            lambda changes: _replace_chars(text, changes)),
        st.lists(random_record, min_size=1, max_size=6).map(lambda records: text + "".join(records)),
        st.binary(max_size=2000).map(lambda raw: raw.decode("latin-1")),
    )
    counter = iter(range(10 ** 9))

    @_given(edits, examples, seed_value)
    def body(log_text):
        case = work / f"log-{next(counter)}"
        case.mkdir()
        path = case / "dedicated_log_torch_trace_rank_0_fuzz.log"
        path.write_text(log_text, encoding="utf-8", errors="surrogateescape")
        for strict in (False, True):
            tally.inputs += 1
            try:
                with _time_limit(HANG_SECONDS * 3):
                    imported = import_log(path, ImportOptions(strict=strict, workspace=case))
                    with StoreBackend(case / "store") as opened:
                        for run in imported.runs:
                            opened.write_run(run.run)
            except _Hang:
                tally.problem("hangs", "trace_log", repr(log_text[:200]))
            except UserError:
                pass  # a clear one-line error (a damaged log under --strict, nothing to import)
            except BaseException as error:  # noqa: BLE001
                tally.problem("crashes", "trace_log", f"{type(error).__name__}: {error} for {log_text[:120]!r}")
        outside = [p for p in case.rglob("*") if p.is_file() and p != path and (case / "store") not in p.parents]
        if outside:
            tally.problem("crashes", "trace_log", f"wrote outside the store: {outside[:3]}")
        shutil.rmtree(case, ignore_errors=True)


def _replace_chars(text: str, changes: list[tuple[int, str]]) -> str:
    chars = list(text)
    for offset, char in changes:
        chars[offset] = char
    return "".join(chars)


# -- profiler traces -------------------------------------------------------------------------------


def _profile_trace(tally, work, store, examples, seed_value) -> None:
    event = st.fixed_dictionaries({}, optional={
        "name": st.sampled_from(["## Call CompiledFxGraph abc ##", "ProfilerStep#1", "triton_poi_fused_gelu_0",
                                 "aten::mm", "cudaLaunchKernel"]) | st.text(max_size=20),
        "cat": st.sampled_from(["kernel", "gpu_memcpy", "cuda_runtime", "cpu_op", "user_annotation"]) | _JSON,
        "ph": st.sampled_from(["X", "B", "E", "i"]) | _JSON,
        "ts": st.floats(allow_nan=True, allow_infinity=True) | _JSON, "dur": st.floats() | _JSON,
        "tid": _JSON, "pid": _JSON, "args": st.dictionaries(st.sampled_from(["correlation", "device"]), _JSON) | _JSON,
    })
    documents = st.one_of(
        st.lists(event, max_size=12).map(lambda events: json.dumps({"traceEvents": events, "deviceProperties": []})),
        _JSON.map(json.dumps),
        st.binary(max_size=500).map(lambda raw: raw.decode("latin-1")),
    )
    counter = iter(range(10 ** 9))

    @_given(documents, examples, seed_value)
    def body(document):
        path = work / f"trace-{next(counter)}.json"
        path.write_text(document, encoding="utf-8", errors="surrogateescape")
        _cli(tally, "profile_trace", ["profile", str(path), "--store", str(store)], {0, 2, 5})
        path.unlink()


# -- the language server --------------------------------------------------------------------------

_LSP_METHODS = [
    "textDocument/hover", "textDocument/definition", "textDocument/references", "textDocument/codeLens",
    "textDocument/inlayHint", "textDocument/documentHighlight", "textDocument/documentLink",
    "workspace/symbol", "kernelscope/linkedRanges", "kernelscope/kernelsForLine", "kernelscope/sourceForLine",
    "kernelscope/runOverview", "workspace/executeCommand", "textDocument/didOpen", "textDocument/didChange",
    "textDocument/didClose", "textDocument/didSave", "workspace/didChangeConfiguration", "$/cancelRequest",
    "no/suchMethod", "",
]
_SAFE_COMMANDS = ["kernelscope.runs", "kernelscope.selectRun", "no.such.command"]  # never the ones that compile


class _RawServer:
    """`kernelscope lsp` over pipes, spoken to byte by byte (no client library to tidy
    up what is sent)."""

    def __init__(self, workspace: Path, store: Path, log: Path):
        env = dict(os.environ, PYTHONPATH=str(REPO), KERNELSCOPE_TRACEBACK="")
        self.log = open(log, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "kernelscope", "lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=workspace)
        self.responses: dict = {}
        self.messages: list[dict] = []
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {},
                                    "initializationOptions": {"store": str(store)}}, timeout=60)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                headers[name.lower()] = value.strip()
            body = stream.read(int(headers.get("content-length", 0)))
            try:
                message = json.loads(body)
            except ValueError:
                continue
            with self.lock:
                if "id" in message and "method" not in message:
                    self.responses[message["id"]] = message
                else:
                    self.messages.append(message)
                    if "id" in message:  # a request from the server (refresh, progress): answer it
                        self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                self.lock.notify_all()

    def send_raw(self, body: bytes, extra_headers: str = "") -> None:
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n{extra_headers}\r\n".encode("ascii") + body)
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode("utf-8"))

    def request(self, method: str, params, timeout: float = HANG_SECONDS, request_id=None) -> dict | None:
        request_id = request_id if request_id is not None else f"fuzz-{time.monotonic_ns()}"
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self.lock:
            while request_id not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    return None
                self.lock.wait(left)
            return self.responses.pop(request_id)

    def stop(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.log.close()


def _lsp(tally, work, store, examples, seed_value) -> None:
    workspace = store.parent
    model = (workspace / "examples" / "mlp.py").as_uri()
    generated = (store / "runs/1/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py").as_uri()
    uris = st.sampled_from([model, generated, "file:///nonexistent.py", "untitled:Untitled-1", "file://", "",
                            "file:///%00", (store / "kernelscope.sqlite").as_uri(), model + "#frag",
                            "file:///" + "a" * 5000]) | st.text(max_size=30)
    numbers = st.integers(-(2 ** 63), 2 ** 63) | st.sampled_from([0, 1, 12, 10 ** 9]) | _JSON
    position = st.fixed_dictionaries({"line": numbers, "character": numbers})
    shaped = st.fixed_dictionaries({"textDocument": st.fixed_dictionaries({"uri": uris}), "position": position},
                                   optional={"range": st.fixed_dictionaries({"start": position, "end": position}),
                                             "context": _JSON, "query": _JSON, "line": numbers, "uri": uris,
                                             "command": st.sampled_from(_SAFE_COMMANDS),
                                             "arguments": st.lists(_JSON, max_size=3),
                                             "contentChanges": st.lists(st.fixed_dictionaries({"text": st.text(
                                                 max_size=200)}), max_size=2), "settings": _JSON})
    request = st.builds(lambda method, params, has_id: (method, params, has_id),
                        st.sampled_from(_LSP_METHODS), shaped | _JSON, st.booleans())
    raw = st.binary(max_size=300) | st.sampled_from([b"{", b"[]", b"null", b'{"jsonrpc": "2.0"}',
                                                     b'{"jsonrpc": "2.0", "id": 1}', b'{"id": {}, "method": 7}'])
    inputs = st.lists(st.one_of(request, raw), min_size=1, max_size=3)
    log = work / "lsp.stderr"
    state = {"server": _RawServer(workspace, store, log)}

    @_given(inputs, examples, seed_value)
    def body(batch):
        server = state["server"]
        for item in batch:
            tally.inputs += 1
            try:
                if isinstance(item, bytes):
                    server.send_raw(item)
                else:
                    method, params, has_id = item
                    if method == "workspace/executeCommand" and isinstance(params, dict):
                        params = {**params, "command": params.get("command") if params.get("command") in
                                  _SAFE_COMMANDS else "kernelscope.runs"}
                    message = {"jsonrpc": "2.0", "method": method, "params": params}
                    if has_id:
                        message["id"] = f"x-{time.monotonic_ns()}"
                    server.send(message)
            except OSError:
                pass
        answer = server.request("workspace/executeCommand", {"command": "kernelscope.runs"})
        if server.process.poll() is not None:
            tally.problem("crashes", "lsp", f"the server exited ({server.process.returncode}) after {batch!r}")
        elif answer is None:
            tally.problem("hangs", "lsp", f"no answer within {HANG_SECONDS:.0f}s after {batch!r}")
        if answer is None:
            server.stop() if server.process.poll() is None else None
            state["server"] = _RawServer(workspace, store, log)
            return
        with server.lock:
            seen = [json.dumps(m) for m in server.messages] + [json.dumps(r) for r in server.responses.values()]
            server.messages.clear()
            server.responses.clear()
        if any("Traceback (most recent call last)" in text for text in seen):
            tally.problem("tracebacks", "lsp", f"a message to the client holds a traceback after {batch!r}")

    state["server"].stop()
    logged = log.read_text(errors="replace") if log.exists() else ""
    count = logged.count("Traceback (most recent call last)")
    if count:
        tally.tracebacks += count
        tally.problems.append(f"lsp: {count} traceback(s) in the server's log, e.g. "
                              f"{logged[logged.index('Traceback'):][:300]!r}")
