"""What recording memory costs (docs/memory.md): the time spent on it against the whole
recording, per model, on this machine (virtual-cuda).

    python bench/memory_cost.py [--cases mlp,gpt2,nanogpt_deep,llama] [--train] [--json OUT]

Each case is recorded once in this process with every memory step timed where it runs:
reading sizes off Inductor's IR at codegen (engine/memory.capture), the timeline from the
wrapper (graph_memory), what each forward saves (mark_saved), and storing it
(store/parts/memory.write_memory); the recording's own time is the recorder's total plus
the store write. The ratio is memory time / recording time; the target (issue 34) is <= 5%.
Timing the steps themselves, rather than two recordings with and without, keeps the noise
of a shared machine (seconds between identical compiles) out of a cost of milliseconds.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CASES = {"mlp": "examples/mlp.py:make", "gpt2": "bench/models/gpt2.py:make",
         "nanogpt_deep": "bench/models/nanogpt_deep.py:make_12", "llama": "bench/models/llama.py:make"}


def timed(module, name: str, spent: list[float]) -> None:
    original = getattr(module, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    setattr(module, name, wrapper)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--train", action="store_true", help="record training (forward and backward)")
    parser.add_argument("--json", help="write the rows as JSON")
    args = parser.parse_args()

    from kernelscope.engine import memory
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.store import StoreBackend
    from kernelscope.store.parts import memory as stored_memory

    spent: list[float] = []
    for name in ("capture", "graph_memory", "mark_saved"):
        timed(memory, name, spent)
    timed(stored_memory, "write_memory", spent)
    rows = []
    for case in args.cases.split(","):
        spent.clear()
        started = time.perf_counter()
        run = record_factory(str(REPO / CASES[case]), RecordOptions(device="virtual-cuda", train=args.train,
                                                                     workspace=REPO))
        with tempfile.TemporaryDirectory() as scratch, StoreBackend(Path(scratch) / ".kernelscope") as store:
            store.write_run(run)
        total = time.perf_counter() - started
        memory_seconds = sum(spent)
        buffers = sum(len(graph.memory.buffers) for graph in run.graphs if graph.memory is not None)
        rows.append({"case": case, "mode": "train" if args.train else "inference", "recording_s": round(total, 3),
                     "memory_s": round(memory_seconds, 4), "ratio": memory_seconds / total, "buffers": buffers})
        print(f"{case:<14} {rows[-1]['mode']:<9} recording {total:7.2f} s · memory {memory_seconds * 1000:8.1f} ms "
              f"({buffers} buffers) · ratio {memory_seconds / total * 100:.2f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
