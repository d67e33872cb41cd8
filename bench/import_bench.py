"""`kernelscope import` against tlparse on the same TORCH_TRACE logs, side by side.

    python bench/import_bench.py [--large-mb 100] [--repeat 3] [--log LOG]

1. Writes a real log: `kernelscope compile examples/mlp.py:make --train` with
   TORCH_TRACE set (a genuine CUDA-target compile, provenance tracking on), unless
   --log names one.
2. Makes a large log (>= --large-mb) from it by replaying its records with fresh
   compile ids (frame_id shifted per copy, payloads and their md5 unchanged), as a
   long job with many graphs would write.
3. Runs, in fresh processes, `kernelscope import LOG --store ...` and
   `tlparse LOG -o ... --overwrite --no-browser --inductor-provenance` on each log,
   measuring wall time and the child's peak RSS (wait4), median of --repeat runs.
Prints a table with the ratios kernelscope / tlparse (below 1 is better for us).
Needs `pip install tlparse`.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one child process; raises if it fails."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def write_real_log(workdir: Path) -> Path:
    trace = workdir / "trace"
    env = dict(os.environ, TORCH_TRACE=str(trace), TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "kernelscope", "compile", "examples/mlp.py:make", "--train",
                    "--store", str(workdir / "recorded"), "--json"], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (log,) = trace.glob("dedicated_log_torch_trace*.log")
    return log


def replicate(source: Path, target: Path, min_bytes: int) -> int:
    """Copies of `source`'s records with shifted frame ids until `target` >= min_bytes."""
    lines = source.read_bytes().splitlines(keepends=True)
    frames = 1 + max((json.loads(record.split(b"] ", 1)[1]).get("frame_id") or 0)
                     for record in lines if record[:1] in b"VIWEC" and b"] {" in record)
    copies = 0
    with open(target, "wb") as out:
        while out.tell() < min_bytes:
            shift = copies * frames
            for line in lines:
                if line[:1] == b"\t" or b"] {" not in line:
                    out.write(line)
                    continue
                prefix, metadata = line.split(b"] ", 1)
                data = json.loads(metadata)
                if isinstance(data.get("frame_id"), int):
                    data["frame_id"] += shift
                metrics = data.get("compilation_metrics")
                if isinstance(metrics, dict) and isinstance(metrics.get("compile_id"), str):
                    frame, _, rest = metrics["compile_id"].partition("/")
                    metrics["compile_id"] = f"{int(frame) + shift}/{rest}" if frame.isdigit() else metrics["compile_id"]
                out.write(prefix + b"] " + json.dumps(data).encode() + b"\n")
            copies += 1
    return copies


def bench(log: Path, workdir: Path, repeat: int, tlparse: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    results = {"kernelscope": [], "tlparse": []}
    for index in range(repeat):
        store = workdir / f"store-{log.stem}-{index}"
        out = workdir / f"tl-{log.stem}-{index}"
        results["kernelscope"].append(measure(
            [sys.executable, "-m", "kernelscope", "import", str(log), "--store", str(store), "--json"], env))
        results["tlparse"].append(measure(
            [tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser", "--inductor-provenance"]))
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return {tool: (statistics.median(t for t, _ in runs), statistics.median(m for _, m in runs))
            for tool, runs in results.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large-mb", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--log", type=Path, help="a TORCH_TRACE log to start from (default: record one)")
    args = parser.parse_args()
    tlparse = shutil.which("tlparse")
    if tlparse is None:
        raise SystemExit("tlparse is not installed: pip install tlparse")
    version = subprocess.run([tlparse, "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        workdir = Path(tmp)
        small = args.log or write_real_log(workdir)
        large = workdir / "dedicated_log_torch_trace_large.log"
        copies = replicate(small, large, int(args.large_mb * 1024 * 1024))
        rows = []
        for name, log in (("small", small), (f"large ({copies} copies)", large)):
            timing = bench(log, workdir, args.repeat, tlparse)
            rows.append((name, log.stat().st_size / 1e6, timing))
    print(f"kernelscope import vs {version} --inductor-provenance; median of {args.repeat} fresh processes; "
          f"{os.cpu_count()} CPU(s)")
    header = f"{'log':<22}{'MB':>8}{'ks s':>9}{'tl s':>9}{'time ratio':>12}{'ks MB':>9}{'tl MB':>9}{'mem ratio':>11}"
    print(header)
    print("-" * len(header))
    for name, size, timing in rows:
        (ks_s, ks_mb), (tl_s, tl_mb) = timing["kernelscope"], timing["tlparse"]
        print(f"{name:<22}{size:>8.1f}{ks_s:>9.2f}{tl_s:>9.2f}{ks_s / tl_s:>12.2f}"
              f"{ks_mb:>9.0f}{tl_mb:>9.0f}{ks_mb / tl_mb:>11.2f}")
    print("ratio = kernelscope / tlparse (below 1: kernelscope is faster / smaller)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
