"""Below the kernel, what it costs: each Triton kernel compiled to PTX and SASS (with its
line maps and facts), against the recording it belongs to, side by side in one run.

    python bench/asm_cost.py [--cases gpt2 bert ...] [--repeat 1] [--baseline-repo /path/to/main]

For each model of the zoo (bench/models/, inference; or SPEC=file.py:factory[:train]), in
fresh processes with fresh Inductor and Triton caches, alternating:
- record:      `kernelscope compile SPEC --json` (virtual-cuda): a recording without
               anything below the kernel, as every recording is by default;
- record+asm:  the same with `--asm`: every Triton kernel compiled below Triton right
               after the run is stored (what `query --asm` / `show --asm` otherwise do on
               first ask, a kernel at a time);
- baseline:    with --baseline-repo, `kernelscope compile` of that checkout (e.g. main
               before below-the-kernel): a recording without it must not get slower.
Reported per model: kernels, median seconds of each, seconds per kernel (mean and max),
the build's share of a recording (asm seconds / recording seconds), record+asm / record and
record / baseline. Times are in-process (`timings.total` of the JSON summary: import,
capture, lower, codegen, store, asm).
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
ZOO = {
    "gpt2": "bench/models/gpt2.py:make",
    "gpt2_eager": "bench/models/gpt2.py:make_eager_attention",
    "bert": "bench/models/bert.py:make",
    "llama": "bench/models/llama.py:make",
    "transformer_encoder": "bench/models/transformer_encoder.py:make",
    "small_cnn": "bench/models/small_cnn.py:make",
    "moe": "bench/models/moe.py:make",
}


def _spec(case: str) -> tuple[str, bool]:
    """`gpt2` or `path.py:factory[:train]` -> (spec, train)."""
    spec = ZOO.get(case, case)
    if spec.endswith(":train"):
        return spec[: -len(":train")], True
    return spec, False


def _record(repo: Path, spec: str, train: bool, asm: bool) -> dict:
    """One recording in a fresh process (fresh Inductor and Triton caches); its JSON summary."""
    with tempfile.TemporaryDirectory(prefix="kernelscope-asm-cost-") as directory:
        env = dict(os.environ, PYTHONPATH=str(repo), TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1",
                   TORCHINDUCTOR_CACHE_DIR=str(Path(directory) / "inductor"),
                   TRITON_CACHE_DIR=str(Path(directory) / "triton"))
        command = [sys.executable, "-m", "kernelscope", "compile", spec, "--target", "virtual-cuda", "--json",
                   "--store", str(Path(directory) / ".kernelscope")]
        command += ["--train"] if train else []
        command += ["--asm"] if asm else []
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def measure(case: str, repeat: int, baseline: Path | None) -> dict:
    spec, train = _spec(case)
    runs: dict[str, list[dict]] = {"record": [], "record+asm": [], "baseline": []}
    for _ in range(repeat):
        if baseline is not None:
            runs["baseline"].append(_record(baseline, spec, train, asm=False))
        runs["record"].append(_record(REPO, spec, train, asm=False))
        runs["record+asm"].append(_record(REPO, spec, train, asm=True))
    with_asm = runs["record+asm"]
    kernel_seconds = [s for run in with_asm for s in run["asm"]["kernel_seconds"]]
    record = statistics.median(run["timings"]["total"] for run in runs["record"])
    recorded_part = statistics.median(run["timings"]["total"] - run["timings"]["asm"] for run in with_asm)
    asm = statistics.median(run["timings"]["asm"] for run in with_asm)
    row = {
        "case": case,
        "spec": spec + (" --train" if train else ""),
        "kernels": with_asm[0]["asm"]["built"],
        "failed": with_asm[0]["asm"]["failed"],
        "record_s": round(record, 2),
        "record_asm_s": round(statistics.median(run["timings"]["total"] for run in with_asm), 2),
        "asm_s": round(asm, 2),
        "s_per_kernel": round(statistics.mean(kernel_seconds), 3) if kernel_seconds else None,
        "max_s_per_kernel": round(max(kernel_seconds), 3) if kernel_seconds else None,
        "asm_share_of_recording": round(asm / recorded_part, 3) if recorded_part else None,
        "record_asm_over_record": round(statistics.median(run["timings"]["total"] for run in with_asm) / record, 3),
        "repeat": repeat,
    }
    if runs["baseline"]:
        baseline_s = statistics.median(run["timings"]["total"] for run in runs["baseline"])
        row["baseline_s"] = round(baseline_s, 2)
        row["record_over_baseline"] = round(record / baseline_s, 3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", default=list(ZOO),
                        help=f"zoo models ({', '.join(ZOO)}) or FILE.py:FACTORY[:train] (default: the zoo)")
    parser.add_argument("--repeat", type=int, default=1, help="recordings of each kind per case (medians)")
    parser.add_argument("--baseline-repo", type=Path,
                        help="a kernelscope checkout to record with as the baseline (e.g. main without --asm)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    rows = []
    header = (f"{'case':22} {'kernels':>7} {'record s':>9} {'+asm s':>8} {'asm s':>7} {'s/kernel':>8} "
              f"{'max':>6} {'share':>6} {'+asm/rec':>8} {'rec/base':>8}")
    print(header)
    for case in args.cases:
        row = measure(case, args.repeat, args.baseline_repo)
        rows.append(row)
        print(f"{row['case']:22} {row['kernels']:>7} {row['record_s']:>9.2f} {row['record_asm_s']:>8.2f} "
              f"{row['asm_s']:>7.2f} {row['s_per_kernel'] or 0:>8.3f} {row['max_s_per_kernel'] or 0:>6.2f} "
              f"{row['asm_share_of_recording'] or 0:>6.2f} {row['record_asm_over_record']:>8.2f} "
              f"{row.get('record_over_baseline', float('nan')):>8.3f}", flush=True)
        for failure in row["failed"]:
            print(f"    not built: {failure}")
    kernels = sum(row["kernels"] for row in rows)
    total_asm = sum(row["asm_s"] for row in rows)
    print(f"all: {kernels} kernels, {total_asm:.1f} s below the kernel, {total_asm / max(kernels, 1):.3f} s per kernel")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
