"""Many writers and readers on one store at once: no lost run, no lock error, no half run.

Writers: N processes writing runs through `StoreBackend.write_run` (the path every recording
takes: CLI, watch, language server, import), each opening the store anew for every run as
a CLI invocation does; with `real`, also the language server (`kernelscope.compile`),
`kernelscope watch` (saves) and `kernelscope compile` processes, all into the same store.
Readers: M processes that, until the writers are done, open the store, list its runs and
check each one they see is whole (its graphs, kernels and files all there), and query a
model line of it. Every run a writer reported must be in the store at the end.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from faults.common import DEVICE, REPO, remove

WRITER = r"""
import json, sys, time
from pathlib import Path
from kernelscope.store import StoreBackend
from synthetic_runs import make_mlp_run
store, workspace, name, count = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
for index in range(count):
    began = time.perf_counter()
    try:
        with StoreBackend(store) as opened:
            run_id = opened.write_run(make_mlp_run(workspace, created=time.time()))
        print(json.dumps({"run": run_id, "seconds": time.perf_counter() - began}), flush=True)
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
"""

READER = r"""
import json, os, sys
from pathlib import Path
from kernelscope.store import StoreBackend
store, stop = Path(sys.argv[1]), Path(sys.argv[2])
queries, half, locks, errors = 0, [], [], []
def one_pass():
    global queries
    with StoreBackend(store, create=False) as opened:
        runs = opened.runs()
        for run in runs[:3]:
            details = opened.show(run.id)
            files = [f for graph in details.graphs for f in graph.files.values()] + \
                    [kernel.file for kernel in details.kernels if kernel.file]
            missing = [f for f in files if not (store / f).is_file()]
            if len(details.graphs) != run.graph_count or len(details.kernels) != run.kernel_count or missing:
                half.append(f"run {run.id}: {len(details.graphs)}/{run.graph_count} graphs, "
                            f"{len(details.kernels)}/{run.kernel_count} kernels, missing {missing[:2]}")
            opened.query("examples/mlp.py", 13, run_id=run.id)  # every writer records this model
            queries += 1
while not stop.exists():
    try:
        one_pass()
    except Exception as error:
        text = f"{type(error).__name__}: {error}"
        (locks if "locked" in text or "busy" in text else errors).append(text)
print(json.dumps({"queries": queries, "half": half, "locks": locks, "errors": errors}))
"""


def run(writers: int, runs_per_writer: int, readers: int, real: bool = False) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix="kernelscope-concurrency-"))
    store = workspace / ".kernelscope"
    stop = workspace / "stop"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]),
               TORCHINDUCTOR_COMPILE_THREADS="1")
    from synthetic_runs import make_mlp_run  # writes examples/mlp.py (a real model) into the workspace

    make_mlp_run(workspace)
    from kernelscope.store import StoreBackend
    from kernelscope.store.health import integrity

    StoreBackend(store).close()  # readers find an (empty) store from the start
    reader_processes = [subprocess.Popen([sys.executable, "-c", READER, str(store), str(stop)], env=env, cwd=workspace,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                        for _ in range(readers)]
    written: dict[str, list[int]] = {}
    write_errors: list[str] = []
    write_seconds: list[float] = []
    try:
        writer_processes = [subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), str(workspace), f"writer-{index}", str(runs_per_writer)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for index in range(writers)]
        real_threads = _start_real_writers(workspace, store, env, written, write_errors) if real else []
        for index, process in enumerate(writer_processes):
            out, err = process.communicate(timeout=1800)
            runs = []
            for line in out.splitlines():
                item = json.loads(line)
                if "error" in item:
                    write_errors.append(item["error"])
                else:
                    runs.append(item["run"])
                    write_seconds.append(item["seconds"])
            written[f"writer process {index}"] = runs
            if process.returncode != 0:
                write_errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {process.returncode}")
        for thread in real_threads:
            thread.join(timeout=1800)
    finally:
        stop.write_text("")
    reader_results = []
    for process in reader_processes:
        out, err = process.communicate(timeout=300)
        reader_results.append(json.loads(out.strip().splitlines()[-1]) if out.strip() else
                              {"queries": 0, "half": [], "locks": [], "errors": [err.strip()[-300:]]})
    with StoreBackend(store, create=False) as opened:
        present = {run.id for run in opened.runs()}
    reported = {run for runs in written.values() for run in runs}
    report = integrity.check(store)
    result = {
        "writers": writers + (3 if real else 0),
        "readers": readers,
        "runs_written": len(reported),
        "runs_found": len(present),
        "runs_lost": len(reported - present),
        "by_writer": {name: len(runs) for name, runs in written.items()},
        "reader_queries": sum(r["queries"] for r in reader_results),
        "half_runs_seen": sum(len(r["half"]) for r in reader_results),
        "lock_errors": sum(len(r["locks"]) for r in reader_results)
        + sum(1 for error in write_errors if "locked" in error or "busy" in error),
        "other_errors": sum(len(r["errors"]) for r in reader_results)
        + sum(1 for error in write_errors if "locked" not in error and "busy" not in error),
        "errors": ([e for r in reader_results for e in r["locks"] + r["errors"] + r["half"]] + write_errors)[:10],
        "max_write_seconds": max(write_seconds, default=0.0),
        "store_healthy": report.healthy,
    }
    remove(workspace)
    return result


def _start_real_writers(workspace: Path, store: Path, env: dict, written: dict, errors: list) -> list[threading.Thread]:
    """The language server, `kernelscope watch` and `kernelscope compile`, each writing into the store."""
    target = "examples/mlp.py:make"

    def cli() -> None:
        runs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-m", "kernelscope", "compile", target, "--store", str(store),
                                   "--target", DEVICE, "--json"], cwd=workspace, env=env, capture_output=True,
                                  text=True, timeout=900)
            if done.returncode == 0:
                runs.append(json.loads(done.stdout)["run"])
            else:
                errors.append(f"kernelscope compile: {done.stderr.strip()[-300:]}")
        written["kernelscope compile"] = runs

    def watch() -> None:
        process = subprocess.Popen([sys.executable, "-m", "kernelscope", "watch", target, "--json", "--store",
                                    str(store), "--target", DEVICE, "--quiet-period", "0.05", "--keep", "100000"],
                                   cwd=workspace,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        runs, model = [], workspace / "examples" / "mlp.py"
        original = model.read_text()
        try:
            for line in process.stdout:
                event = json.loads(line)
                if event["event"] == "build_finished":
                    runs.append(event["run_id"])
                    if len(runs) == 2:
                        break
                    saved = model.with_suffix(".saving")  # saved as editors do: readers never see half a file
                    saved.write_text(original + f"\n# save {len(runs)}\n")
                    os.replace(saved, model)
                elif event["event"] == "build_failed":
                    errors.append(f"watch: {event['message']}")
                    break
        finally:
            process.terminate()
            process.wait(timeout=60)
        written["kernelscope watch"] = runs

    def lsp() -> None:
        async def body():
            from lsp_support import start_session

            session = await start_session(workspace, {"store": str(store), "deviceTarget": DEVICE})
            runs = []
            try:
                for _ in range(2):
                    try:
                        result = await session.command("kernelscope.compile", {"target": target})
                        runs.append(result["runId"] if isinstance(result, dict) else result.runId)
                    except Exception as error:  # noqa: BLE001 - reported as a write error
                        errors.append(f"language server: {error}")
            finally:
                await session.stop()
            written["language server"] = runs

        asyncio.run(body())

    threads = [threading.Thread(target=function, daemon=True) for function in (cli, watch, lsp)]
    for thread in threads:
        thread.start()
        time.sleep(0.2)
    return threads
