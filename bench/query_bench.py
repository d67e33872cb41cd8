"""Whole-stack query latency and store cost on a deep model (GPT-2 with 12 blocks).

    python bench/query_bench.py [--queries 200] [--train]

Records bench/models/gpt2.py:make_12_layers once (virtual-cuda, fresh Inductor
caches) into a store on disk, then, in the same run:
- query latency, p50/p99 over N queries each (a fresh StoreBackend per round, as a CLI
  would see it) of
  * the outer line `hidden_states = block(...)` in transformers' modeling_gpt2.py
    (reaches every node of the 12 blocks via call): the summary the CLI prints by
    default (`detail=False, rollup=True`), and every kernel and wrapper line
    (`detail=True`, what `--json`/`--detail` print);
  * the same line with `--module transformer.h.5` (one block), summary;
  * the inner line `hidden_states = self.act(hidden_states)` (direct, 12 instances),
    summary and detail;
  * the inner line with `direct_only` (the answer before whole-stack provenance);
- store size: the database with the whole-stack data against the same database with
  it removed (call stacks, module instances, pass lineage dropped, VACUUMed both),
  the ratio being what this change costs on disk;
- store write time of the run with and without that data (median of 5 writes).
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _time_queries(store_dir: Path, path: str, line: int, rounds: int, **options) -> tuple[list[float], int]:
    from kernelscope.store import StoreBackend

    samples, nodes = [], 0
    for _ in range(rounds):
        with StoreBackend(store_dir, create=False) as store:
            started = time.perf_counter()
            result = store.query(path, line, **options)
            samples.append((time.perf_counter() - started) * 1000)
            nodes = sum(len(chain.post_nodes) for chain in result.graphs)
    return samples, nodes


def _without_whole_stack(record):
    stripped = copy.deepcopy(record)
    for graph in stripped.graphs:
        for node in graph.pre_grad_nodes + graph.post_grad_nodes:
            node.stack, node.module_path, node.module_class, node.lineage = [], "", "", []
    for brk in stripped.graph_breaks:
        brk.explanation, brk.hints, brk.url, brk.stack = "", [], "", []
    return stripped


def _db_size(store_dir: Path, strip: bool) -> int:
    copy_path = store_dir / ("stripped.sqlite" if strip else "full.sqlite")
    shutil.copy(store_dir / "kernelscope.sqlite", copy_path)
    conn = sqlite3.connect(copy_path)
    if strip:
        conn.execute("UPDATE nodes SET stack_id = NULL, module_path = '', module_class = '', lineage_json = NULL")
        conn.execute("DELETE FROM stack_frames")
        conn.execute("DELETE FROM stacks")
        conn.execute("DROP INDEX frames_by_line")
        conn.execute("DROP INDEX nodes_by_stack")
        conn.commit()
    conn.execute("VACUUM")
    conn.close()
    size = copy_path.stat().st_size
    copy_path.unlink()
    return size


def _write_seconds(record, repeat: int = 5) -> float:
    from kernelscope.store import StoreBackend

    samples = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as directory:
            with StoreBackend(Path(directory) / "store") as store:
                started = time.perf_counter()
                store.write_run(record)
                samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=100, help="queries per case (default 100)")
    parser.add_argument("--train", action="store_true", help="record forward and backward")
    args = parser.parse_args()

    from torch._inductor.utils import fresh_cache

    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.store import StoreBackend

    spec = f"{REPO / 'bench/models/gpt2.py'}:make_12_layers"
    with fresh_cache():
        started = time.perf_counter()
        record = record_factory(spec, RecordOptions(device="virtual-cuda", train=args.train, workspace=REPO))
        print(f"recorded GPT-2 (12 blocks{', train' if args.train else ''}) in {time.perf_counter() - started:.1f}s: "
              f"{sum(len(g.kernels) for g in record.graphs)} kernels, "
              f"{sum(len(g.post_grad_nodes) for g in record.graphs)} post-grad nodes")

    import transformers.models.gpt2.modeling_gpt2 as modeling

    model_file = modeling.__file__
    text = Path(model_file).read_text().splitlines()
    outer = next(number for number, line in enumerate(text, 1) if "hidden_states = block(" in line)
    inner = next(number for number, line in enumerate(text, 1) if "hidden_states = self.act(hidden_states)" in line)

    with tempfile.TemporaryDirectory() as directory:
        store_dir = Path(directory) / "store"
        with StoreBackend(store_dir) as store:
            store.write_run(record)
        summary = {"detail": False, "rollup": True}
        cases = [
            ("outer line (block call), summary", outer, summary),
            ("outer line, every generated line (--detail)", outer, {}),
            ("outer line, --module transformer.h.5, summary", outer, {"module": "transformer.h.5", **summary}),
            ("inner line (GELU, 12 instances), summary", inner, summary),
            ("inner line, every generated line (--detail)", inner, {}),
            ("inner line, --direct-only --detail (the old answer)", inner, {"direct_only": True}),
        ]
        print(f"\nquery latency over {args.queries} queries each, fresh StoreBackend per query "
              f"({Path(model_file).name}:{outer} / :{inner})")
        print(f"{'case':52} {'nodes':>6} {'p50 ms':>8} {'p99 ms':>8}")
        for label, line, options in cases:
            samples, nodes = _time_queries(store_dir, model_file, line, args.queries, **options)
            print(f"{label:52} {nodes:>6} {_percentile(samples, 0.5):>8.2f} {_percentile(samples, 0.99):>8.2f}")

        full, stripped = _db_size(store_dir, strip=False), _db_size(store_dir, strip=True)
        files = sum(path.stat().st_size for path in (store_dir / "runs").rglob("*") if path.is_file())
        print(f"\nstore size: database {full / 1e6:.2f} MB with whole-stack data, {stripped / 1e6:.2f} MB without "
              f"(ratio {full / stripped:.2f}); generated files {files / 1e6:.2f} MB (unchanged); "
              f"whole store ratio {(full + files) / (stripped + files):.2f}")

    with_stack, without_stack = _write_seconds(record), _write_seconds(_without_whole_stack(record))
    print(f"store write: {with_stack * 1000:.0f} ms with whole-stack data, {without_stack * 1000:.0f} ms without "
          f"(ratio {with_stack / without_stack:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
