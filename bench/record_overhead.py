"""Recording overhead: `kernelscope compile` against a plain torch.compile of the
same model for the same device target, side by side in one run.

    python bench/record_overhead.py [--repeat 3] [--target virtual-cuda] [--examples mlp ...]
    python bench/record_overhead.py --target cpu --examples swiglu_mlp swiglu_mlp:train mlp  # C++ kernels

Every measurement is a fresh process with fresh Inductor caches, alternating
plain and recorded so that machine noise hits both alike:
- plain:   torch.compile under the same device target (virtual-cuda needs our
           fake-CUDA context to generate CUDA code without a GPU), caches off,
           provenance tracking off, no probes, no structured trace, no store;
- recorded: `python -m kernelscope compile EXAMPLE --store TMP --json` (probes,
           Inductor's provenance tracking, the trace capture, the store write).
Reported per model: medians of whole-process wall time, of the compile alone
(process time minus `import torch`), and of peak RSS, with recorded/plain ratios.
The issue's target is a wall-time ratio of at most 1.10.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ["mlp", "mlp:train", "attention", "conv_bn", "graph_break", "function"]

_PLAIN_CHILD = r"""
import json, sys, time
started = time.perf_counter()
import torch
import torch._inductor.compile_fx
import torch._inductor.config as inductor_config
from torch._inductor.utils import fresh_cache
sys.path.insert(0, {repo!r})
from kernelscope.engine import targets
from kernelscope.engine.devices.device_target import device_target
from kernelscope.engine.user_model import scalar_loss
imported = time.perf_counter()
model, inputs = targets.load_factory(targets.parse_factory_spec({spec!r}))
with fresh_cache(), inductor_config.patch(force_disable_caches=True, compile_threads=1), \
        device_target({device!r}):
    compiled = torch.compile(model)
    if {train!r}:
        scalar_loss(compiled(*inputs)).backward()  # the loss `kernelscope compile --train` uses
    else:
        with torch.no_grad():
            compiled(*inputs)
done = time.perf_counter()
print("BENCH_JSON" + json.dumps({{"import": imported - started, "compile": done - imported}}))
"""


def _run_child(argv: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, stdout, CPU seconds) of one fresh process. CPU time
    (user + system, the child and its own children) hardly moves when other jobs load the
    machine; wall time does."""
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONPATH=str(REPO))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed:\n{stderr[-2000:]}")
    return wall, _peak_mb(stderr), stdout, cpu


def _peak_mb(stderr: str) -> float:
    for line in reversed(stderr.splitlines()):
        if line.startswith("BENCH_PEAK_KB "):
            return int(line.split()[1]) / 1024
    return float("nan")


def _with_peak(code_or_module: list[str]) -> list[str]:
    """Run the child under a tiny wrapper that prints its own peak RSS to stderr at exit."""
    wrapper = (
        "import atexit, resource, runpy, sys\n"
        "atexit.register(lambda: print('BENCH_PEAK_KB', "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))\n"
        "argv = sys.argv[1:]\n"
        "if argv[0] == '-c':\n"
        "    sys.argv = ['-c', *argv[2:]]\n"
        "    exec(compile(argv[1], '<bench child>', 'exec'), {'__name__': '__main__'})\n"
        "else:\n"
        "    sys.argv = [argv[1], *argv[2:]]\n"
        "    runpy.run_module(argv[1], run_name='__main__', alter_sys=True)\n"
    )
    return [sys.executable, "-c", wrapper, *code_or_module]


def example_spec(example: str) -> str:
    return f"examples/{example}.py:make"


def measure_plain(spec: str, train: bool, device: str) -> dict:
    """A plain torch.compile of `spec` (PATH.py:FACTORY, relative to the repository)."""
    spec = str(REPO / spec)
    code = _PLAIN_CHILD.format(repo=str(REPO), spec=spec, device=device, train=train)
    wall, peak, stdout, cpu = _run_child(_with_peak(["-c", code]))
    inner = json.loads(next(line for line in stdout.splitlines() if line.startswith("BENCH_JSON"))[10:])
    return {"wall": wall, "cpu": cpu, "compile": inner["compile"], "peak_mb": peak}


def measure_recorded(spec: str, train: bool, device: str, store: Path) -> dict:
    """`kernelscope compile SPEC --json`; also returns its summary (coverage, graphs)."""
    argv = ["-m", "kernelscope", "compile", spec, "--store", str(store),
            "--target", device, "--json"] + (["--train"] if train else [])
    wall, peak, stdout, cpu = _run_child(_with_peak(argv))
    summary = json.loads(stdout)
    timings = summary["timings"]
    return {"wall": wall, "cpu": cpu, "compile": timings["total"] - timings["import"], "peak_mb": peak,
            "summary": summary}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measurements per side and model (median)")
    parser.add_argument("--target", default="virtual-cuda", choices=["virtual-cuda", "cpu-triton", "cpu"])
    parser.add_argument("--examples", nargs="*", default=DEFAULT_CASES,
                        help="example names from examples/, ':train' for forward+backward")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args()

    rows, raw = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.examples:
            example, _, mode = case.partition(":")
            train = mode == "train"
            plain, recorded = [], []
            for index in range(args.repeat):
                plain.append(measure_plain(example_spec(example), train, args.target))
                recorded.append(measure_recorded(example_spec(example), train, args.target,
                                                 Path(scratch) / f"{example}{index}"))
                print(f"  {case} #{index + 1}: plain {plain[-1]['wall']:.2f}s  recorded {recorded[-1]['wall']:.2f}s",
                      file=sys.stderr, flush=True)
            raw[case] = {"plain": plain, "recorded": recorded}
            median = lambda runs, key: statistics.median(run[key] for run in runs)  # noqa: E731
            rows.append([case] + [value for key in ("wall", "compile", "peak_mb") for value in
                                  (median(plain, key), median(recorded, key),
                                   median(recorded, key) / median(plain, key))])

    print(f"\nrecording overhead, target {args.target}, median of {args.repeat} fresh processes each "
          f"(torch {_torch_version()}, {os.cpu_count()} cores)")
    header = f"{'model':14} {'wall plain':>10} {'recorded':>9} {'ratio':>6}   {'compile plain':>13} {'recorded':>9} " \
             f"{'ratio':>6}   {'peak MB plain':>13} {'recorded':>9} {'ratio':>6}"
    print(header)
    for row in rows:
        print(f"{row[0]:14} {row[1]:9.2f}s {row[2]:8.2f}s {row[3]:5.2f}x   {row[4]:12.2f}s {row[5]:8.2f}s "
              f"{row[6]:5.2f}x   {row[7]:13.0f} {row[8]:9.0f} {row[9]:5.2f}x")
    walls = [row[3] for row in rows]
    print(f"wall-time ratio: median {statistics.median(walls):.2f}x, worst {max(walls):.2f}x (target <= 1.10x)")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


def _torch_version() -> str:
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
