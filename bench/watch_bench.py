"""Edit-to-new-run latency: watch mode (warm engine worker) against a cold
`kernelscope compile` of the same edit, measured in the same run.

    python bench/watch_bench.py [--examples mlp attention] [--repeats 3] [--train] [--json out.json]

For each example the script copies examples/<name>.py into two fresh temporary
workspaces. Watch: a `WatchSession` (the mechanism behind `kernelscope watch`)
records the first run, then for each repeat the script saves an edit and
measures from just before the write to the `BuildFinished` event (so the
debounce quiet period, the file event, the protocol and the store write are
all included). Cold: the same sequence of edits, each followed by a fresh
`python -m kernelscope compile` process, measured from the write to the
process's exit. Medians of `--repeats` (at least 3) with the per-phase
breakdown each side reports (import, capture, lower, codegen, store).
"""
from __future__ import annotations

import argparse
import json
import os
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

from kernelscope.watch import BuildFailed, BuildFinished, WatchOptions, WatchSession  # noqa: E402

PHASES = ("import", "capture", "lower", "codegen", "store")
# Each edit toggles between two versions of one line, so every save changes the graph.
EDITS = {
    "mlp": ("h = F.gelu(h)", "h = torch.relu(h)"),
    "attention": ("return self.norm(x + self.proj(out))", "return self.norm(x - self.proj(out))"),
    "conv_bn": ("y = torch.relu(y)", "y = torch.sigmoid(y)"),
    "function": ("torch.nn.functional.silu(gate)", "torch.sigmoid(gate)"),
    "graph_break": ("h = torch.tanh(self.inp(x))", "h = torch.relu(self.inp(x))"),
}


def edited(source: str, example: str, step: int) -> str:
    original, replacement = EDITS[example]
    return source.replace(original, replacement) if step % 2 == 0 else source


class Builds:
    """Waits for a session's build results."""

    def __init__(self):
        self.results: dict[int, object] = {}
        self.condition = threading.Condition()

    def __call__(self, event) -> None:
        if isinstance(event, (BuildFinished, BuildFailed)):
            with self.condition:
                self.results[event.build] = (event, time.perf_counter())
                self.condition.notify_all()

    def wait(self, build: int, timeout: float = 600.0):
        with self.condition:
            if not self.condition.wait_for(lambda: build in self.results, timeout):
                raise RuntimeError(f"build {build} did not finish within {timeout}s")
            event, at = self.results[build]
        if isinstance(event, BuildFailed):
            raise RuntimeError(f"build {build} failed: {event.file}:{event.line}: {event.message}")
        return event, at


def measure_watch(example: str, source: str, args) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix=f"watch-bench-{example}-"))
    path = workspace / f"{example}.py"
    path.write_text(source)
    builds = Builds()
    session = WatchSession(WatchOptions(f"{example}.py:make", store=workspace / ".kernelscope", workspace=workspace,
                                        device=args.device, train=args.train, quiet_seconds=args.quiet_period),
                           builds)
    started = time.perf_counter()
    session.start()
    try:
        _, first_at = builds.wait(1)
        samples = []
        for step in range(args.repeats):
            time.sleep(1.0)  # let the filesystem and the worker settle between edits
            before = time.perf_counter()
            path.write_text(edited(source, example, step))
            event, at = builds.wait(step + 2)
            samples.append({"latency": at - before, **{p: event.timings.get(p, 0.0) for p in PHASES},
                            "worker_total": event.timings.get("total", 0.0)})
    finally:
        session.stop()
        shutil.rmtree(workspace, ignore_errors=True)
    return {"startup": first_at - started, "samples": samples}


def measure_cold(example: str, source: str, args) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix=f"cold-bench-{example}-"))
    path = workspace / f"{example}.py"
    path.write_text(source)
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "kernelscope", "compile", f"{example}.py:make", "--json",
               "--target", args.device, "--store", str(workspace / ".kernelscope")]
    if args.train:
        command.append("--train")
    samples = []
    try:
        for step in range(args.repeats):
            before = time.perf_counter()
            path.write_text(edited(source, example, step))
            result = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True)
            after = time.perf_counter()
            if result.returncode != 0:
                raise RuntimeError(f"cold compile of {example} failed:\n{result.stderr[-2000:]}")
            timings = _summary_json(result.stdout)["timings"]
            samples.append({"latency": after - before, **{p: timings.get(p, 0.0) for p in PHASES}})
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    return {"samples": samples}


def _summary_json(stdout: str) -> dict:
    """The summary `compile --json` printed; the model's own prints may come before it."""
    lines = stdout.splitlines()
    return json.loads("\n".join(lines[lines.index("{"):]))


def median(samples: list[dict], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", nargs="+", default=list(EDITS), choices=list(EDITS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--device", default="virtual-cuda")
    parser.add_argument("--quiet-period", type=float, default=0.3)
    parser.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = parser.parse_args()
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (medians of fewer say little)")
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

    results = {}
    for example in args.examples:
        source = (REPO / "examples" / f"{example}.py").read_text()
        assert EDITS[example][0] in source, f"the edit for {example} no longer matches examples/{example}.py"
        print(f"{example}: watch ...", file=sys.stderr, flush=True)
        warm = measure_watch(example, source, args)
        print(f"{example}: cold compiles ...", file=sys.stderr, flush=True)
        cold = measure_cold(example, source, args)
        results[example] = {"watch": warm, "cold": cold}

    mode = "train" if args.train else "inference"
    print(f"\nedit-to-new-run latency, {args.device}, {mode}, median of {args.repeats} edits "
          f"(quiet period {args.quiet_period:.2f}s included in watch)")
    header = ["example", "watch s", "cold s", "speed-up", "watch start s"]
    rows = []
    for example, result in results.items():
        warm, cold = result["watch"]["samples"], result["cold"]["samples"]
        warm_latency, cold_latency = median(warm, "latency"), median(cold, "latency")
        rows.append([example, f"{warm_latency:.2f}", f"{cold_latency:.2f}", f"{cold_latency / warm_latency:.1f}x",
                     f"{result['watch']['startup']:.2f}"])
    print(_table(header, rows))

    print("\nper-phase medians (s): watch worker | cold process; 'other' = latency not in a phase "
          "(watch: quiet period, file event, protocol; cold: interpreter start, CLI, exit)")
    header = ["example", "side", *PHASES, "other", "latency"]
    rows = []
    for example, result in results.items():
        for side in ("watch", "cold"):
            samples = result[side]["samples"]
            phases = [median(samples, phase) for phase in PHASES]
            latency = median(samples, "latency")
            other = statistics.median(s["latency"] - sum(s[p] for p in PHASES) for s in samples)
            rows.append([example, side, *(f"{value:.2f}" for value in phases), f"{other:.2f}", f"{latency:.2f}"])
    print(_table(header, rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    return "\n".join("  ".join(str(cell).rjust(width) if i else str(cell).ljust(width)
                               for i, (cell, width) in enumerate(zip(row, widths)))
                     for row in [header, *rows])


if __name__ == "__main__":
    sys.exit(main())
