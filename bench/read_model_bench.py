"""The read model on a deep model: `kernelscope query` of an outer and an inner line of a
48-block nanoGPT (width 768, training), the new path against the old one, in one run.

    python bench/read_model_bench.py [--layers 48] [--rounds 30] [--cache DIR] [--fresh]

Records bench/models/nanogpt_deep.py (examples/nanogpt.py at width 768 with `--layers`
blocks; virtual-cuda, forward and backward) once into a store under `--cache`
(default ~/.cache/kernelscope-bench) and reuses it on later runs (`--fresh` records
again). Then, each case over `--rounds` rounds with a fresh StoreBackend per round (as a
one-shot CLI sees the store):

- old: what `query FILE:LINE` computed before the read model, `StoreBackend.query(...,
  detail=False, rollup=True)`: every node of the line and its generated lines, per run;
- new: `StoreBackend.run().line_overview(FILE, LINE)`, the counts the store keeps per line;
- the whole command in-process (`kernelscope.cli.main(["query", ...])`, output
  discarded), which adds opening the store, locating the file and printing;

and prints wall-clock p50/p99 and CPU p50 in ms with the ratio old/new, the targets (outer
line <= 50 ms, inner line <= 10 ms: wall p50 of the new store answer and of the whole
command; on a busy shared machine CPU time says what wall time would be), the number of lines
the default answer prints (the folded answer against the same answer unfolded, as
the CLI printed it before folding; target <= 40) and what keeping the counts costs
when a run is written.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

MODEL = REPO / "examples" / "nanogpt.py"
FILE = "examples/nanogpt.py"
TARGETS_MS = {"outer": 50.0, "inner": 10.0}
TARGET_LINES = 40


def _line(needle: str) -> int:
    return next(number for number, text in enumerate(MODEL.read_text().splitlines(), 1) if needle in text)


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def record(store_dir: Path, layers: int) -> None:
    """Record the deep model into `store_dir` (what `kernelscope compile ... --train` does)."""
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.store import StoreBackend

    factory = {48: "make_48", 12: "make_12", 2: "make_2"}.get(layers)
    if factory is None:
        raise SystemExit(f"--layers must be 2, 12 or 48 (bench/models/nanogpt_deep.py), not {layers}")
    started = time.perf_counter()
    run = record_factory(f"{REPO / 'bench/models/nanogpt_deep.py'}:{factory}",
                         RecordOptions(device="virtual-cuda", train=True, workspace=REPO))
    recorded = time.perf_counter() - started
    print(f"recorded nanoGPT ({layers} blocks, width 768, training) in {recorded:.1f} s: "
          f"{sum(len(g.kernels) for g in run.graphs)} kernels, {sum(len(g.post_grad_nodes) for g in run.graphs)} "
          "post-grad nodes")
    # The same write without counting the line overviews (what writing cost before them), done
    # twice (a process's first write also pays for warming up), then the store the bench reads.
    from kernelscope.store.reading import line_overviews

    counting = line_overviews.write_run
    line_overviews.write_run = lambda conn, run_id: None
    try:
        for _ in range(2):
            with tempfile.TemporaryDirectory() as scratch, StoreBackend(Path(scratch) / "store") as store:
                started, cpu = time.perf_counter(), time.process_time()
                store.write_run(run)
                without, without_cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        line_overviews.write_run = counting
    with StoreBackend(store_dir) as store:
        started, cpu = time.perf_counter(), time.process_time()
        store.write_run(run)
        written, written_cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"store write: {written:.1f} s ({written_cpu:.1f} s CPU) with the line overviews, {without:.1f} s "
          f"({without_cpu:.1f} s CPU) without; ratio {written / without:.2f} ({written_cpu / without_cpu:.2f} CPU)")


def time_rounds(store_dir: Path, rounds: int, answer) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) of `answer(store)` per round, a fresh StoreBackend each round."""
    from kernelscope.store import StoreBackend

    wall, cpu = [], []
    for _ in range(rounds):
        with StoreBackend(store_dir, create=False) as store:
            started, used = time.perf_counter(), time.process_time()
            answer(store)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
    return wall, cpu


def time_command(store_dir: Path, rounds: int, line: int) -> tuple[list[float], list[float], str]:
    """(wall ms, CPU ms, output) of the whole `kernelscope query FILE:LINE`, in-process."""
    from kernelscope.cli import main

    wall, cpu, out = [], [], ""
    for _ in range(rounds):
        buffer = io.StringIO()
        started, used = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(buffer):
            code = main(["query", f"{FILE}:{line}", "--store", str(store_dir)])
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
        assert code == 0
        out = buffer.getvalue()
    return wall, cpu, out


def unfolded_line_count(result) -> int:
    """How many lines `query` printed for `result` before folding: header and text, per graph
    a line, per module instance its line, source lines, Triton and extern lines, the hint."""
    count = 2 if result.text.strip() else 1
    for chain in result.graphs:
        count += 1
        for summary in chain.modules:
            count += 2 + bool(summary.triton_kernels) + bool(summary.extern_calls)
    return count + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=48, help="blocks: 2, 12 or 48 (default 48)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds per case (default 30)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "kernelscope-bench",
                        help="where the recorded store is kept between runs")
    parser.add_argument("--fresh", action="store_true", help="record again even when the cache has the run")
    args = parser.parse_args()

    store_dir = args.cache / f"nanogpt-{args.layers}-train" / ".kernelscope"
    if args.fresh and store_dir.exists():
        import shutil

        shutil.rmtree(store_dir.parent)
    if not (store_dir / "kernelscope.sqlite").exists():
        record(store_dir, args.layers)
    else:
        print(f"reusing the recorded run in {store_dir} (--fresh records again)")

    from kernelscope.store import StoreBackend

    with StoreBackend(store_dir, create=False) as store:
        run = store.run()
        location = run.locate(FILE)
        started = time.perf_counter()
        run.linked_lines(location)  # a store written before line overviews counts them now, once
        first = time.perf_counter() - started
        rows = store.conn.execute("SELECT COUNT(*), SUM(LENGTH(overview_json)) FROM line_overviews WHERE run_id = ?",
                                  (run.id,)).fetchone()
    print(f"line overviews: kept in {rows[0]} rows, {(rows[1] or 0) / 1e3:.0f} kB "
          f"(first read here: {first * 1000:.0f} ms; a store written before them counts a file then)")

    cases = [("outer", "x = block(x)", _line("    x = block(x)")),
             ("inner", "GELU of the MLP", _line('approximate="tanh"'))]
    print(f"\n{args.rounds} rounds per case, a fresh StoreBackend per round; wall ms p50 / p99 [CPU ms p50]; "
          "ratio = old p50 / new p50")
    print(f"{'line':30} {'old query':>24} {'new overview':>22} {'ratio':>7} {'whole command':>22} {'target':>8}")
    verdicts = []
    for kind, name, line in cases:
        old, old_cpu = time_rounds(store_dir, args.rounds,
                                   lambda s, line=line: s.query(FILE, line, detail=False, rollup=True))
        new, new_cpu = time_rounds(store_dir, args.rounds, lambda s, line=line: s.run().line_overview(FILE, line))
        command, command_cpu, out = time_command(store_dir, args.rounds, line)
        with StoreBackend(store_dir, create=False) as store:
            before = unfolded_line_count(store.query(FILE, line, detail=False, rollup=True))
        target = TARGETS_MS[kind]
        met = _percentile(new, 0.5) <= target and _percentile(command, 0.5) <= target
        verdicts.append(met)
        verdict = "met" if met else ("MISSED (wall; CPU met: a busy machine)"
                                     if max(_percentile(new_cpu, .5), _percentile(command_cpu, .5)) <= target
                                     else "MISSED")

        def cell(wall: list[float], cpu: list[float]) -> str:
            return f"{_percentile(wall, .5):.1f} / {_percentile(wall, .99):.1f} [{_percentile(cpu, .5):.1f}]"

        print(f"{f'{kind} L{line} ({name})':30} {cell(old, old_cpu):>24} {cell(new, new_cpu):>22}"
              f"{statistics.median(old) / statistics.median(new):>7.0f}x {cell(command, command_cpu):>22}"
              f"{'<= ' + str(int(target)):>8} {verdict}")
        lines = len(out.splitlines())
        print(f"{'':30} default answer: {lines} lines folded, {before} unfolded "
              f"(target <= {TARGET_LINES}: {'met' if lines <= TARGET_LINES else 'MISSED'})")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
