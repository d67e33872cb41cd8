"""What recording guards, recompile failures and fusion refusals costs (docs/why.md): a
recording with the "why" capture against the same recording without it, side by side.

    python bench/why_cost.py [--repeat 3] [--target cpu-triton] [--cases mlp nanogpt:train recompile_shape]

Every measurement is a fresh process with fresh Inductor caches, alternating with and
without, so that machine noise hits both alike. Inside the process, after `import torch`,
it times the recording and the store write (`record_factory` or `record_script`, then
`write_run`): wall time and CPU time (CPU time hardly moves when other jobs load the
machine). "Without" is `RecordOptions(why=False)`: no WhyNoFuse or guard-failure hook, no
guard parsing, no why rows. Reported per case: medians and with/without ratios, and the
capture's own time measured inside the recording (each of its functions timed: on a
loaded machine the ratios' noise is larger than the cost); the issue's target is a ratio
of at most 1.03.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ["mlp", "not_fused", "nanogpt:train", "recompile_shape"]

_CHILD = r"""
import json, sys, time
sys.path.insert(0, {repo!r})
import torch
from pathlib import Path
from kernelscope.engine import recorder
from kernelscope.engine.record_options import RecordOptions
from kernelscope.store import StoreBackend
options = RecordOptions(device={device!r}, train={train!r}, why={why!r}, workspace=Path({repo!r}))
# The why capture's own time: every function of it that runs during the recording, timed
# (what the WhyNoFuse wrappers add around torch's own calls is too small to time).
import functools
from kernelscope.engine import why_assembly, why_probes
from kernelscope.store.parts import why as why_part
spent = [0.0]
def timed(owner, name):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began
    setattr(owner, name, wrapper)
for owner, name in [(why_assembly, "guards"), (why_assembly, "with_failures"), (why_assembly, "not_fused"),
                    (why_part, "write_run_why"), (why_probes.WhyProbes, "_record_refusal"),
                    (why_probes.WhyProbes, "_record_values")]:
    timed(owner, name)
wall, cpu = time.perf_counter(), time.process_time()
if {script!r}:
    record = recorder.record_script(Path({spec!r}), [], options)
else:
    record = recorder.record_factory({spec!r}, options)
with StoreBackend(Path({store!r})) as store:
    store.write_run(record)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print("BENCH_JSON" + json.dumps({{"wall": wall, "cpu": cpu, "own": spent[0], "guards": len(record.guards),
      "failures": sum(len(r.failures) for r in record.recompiles),
      "not_fused": sum(len(g.not_fused) for g in record.graphs)}}))
"""


def measure(case: str, why: bool, device: str, store: Path) -> dict:
    name, _, mode = case.partition(":")
    path = REPO / "examples" / f"{name}.py"
    script = "def make(" not in path.read_text()
    spec = str(path) if script else f"{path}:make"
    code = _CHILD.format(repo=str(REPO), device=device, train=mode == "train", why=why, script=script, spec=spec,
                         store=str(store))
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{case} (why={why}) failed:\n{done.stderr[-2000:]}")
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("BENCH_JSON"))[10:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measurements per side and case (median)")
    parser.add_argument("--target", default="cpu-triton", choices=["virtual-cuda", "cpu-triton", "cuda"])
    parser.add_argument("--cases", nargs="*", default=DEFAULT_CASES,
                        help="examples/ names (a factory `make` or a script), ':train' for forward+backward")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args()
    rows, raw = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases:
            with_why, without = [], []
            for index in range(args.repeat):  # alternate, so that noise hits both sides alike
                without.append(measure(case, False, args.target, Path(scratch) / f"off-{case}-{index}"))
                with_why.append(measure(case, True, args.target, Path(scratch) / f"on-{case}-{index}"))
                print(f"  {case} #{index + 1}: without {without[-1]['wall']:.2f}s  with {with_why[-1]['wall']:.2f}s",
                      file=sys.stderr, flush=True)
            raw[case] = {"without": without, "with": with_why}
            median = lambda runs, key: statistics.median(run[key] for run in runs)  # noqa: E731
            rows.append((case, median(without, "wall"), median(with_why, "wall"), median(without, "cpu"),
                         median(with_why, "cpu"), with_why[-1], median(with_why, "own")))
    print(f"\nwhy capture cost, target {args.target}, median of {args.repeat} fresh processes each side "
          f"({os.cpu_count()} cores)")
    print(f"{'case':16} {'wall without':>12} {'with':>7} {'ratio':>6}   {'CPU without':>11} {'with':>7} {'ratio':>6}"
          f"   {'why own':>8} {'share':>6}   recorded")
    for case, wall_off, wall_on, cpu_off, cpu_on, last, own in rows:
        print(f"{case:16} {wall_off:11.2f}s {wall_on:6.2f}s {wall_on / wall_off:5.3f}x   {cpu_off:10.2f}s "
              f"{cpu_on:6.2f}s {cpu_on / cpu_off:5.3f}x   {own:7.3f}s {own / wall_on:6.2%}   {last['guards']} guards, "
              f"{last['failures']} failures, {last['not_fused']} refusals")
    cpu_ratios = [row[4] / row[3] for row in rows]
    wall_ratios = [row[2] / row[1] for row in rows]
    print(f"CPU-time ratio: median {statistics.median(cpu_ratios):.3f}x, worst {max(cpu_ratios):.3f}x; "
          f"wall-time ratio: median {statistics.median(wall_ratios):.3f}x, worst {max(wall_ratios):.3f}x "
          "(target <= 1.03x); the capture's own time (timed inside): "
          f"worst {max(row[6] / row[2] for row in rows):.2%} of the recording")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
