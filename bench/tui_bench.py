"""Terminal explorer on a big run: first paint and cursor-move -> highlight latency.

    python bench/tui_bench.py [--kernels 5000] [--instances 48] [--moves 200] [--repeats 5] [--json out.json]

Records examples/mlp.py in training mode once (a real compile: forward and
backward graphs, 12 kernels), then builds a run of at least `--kernels` kernels by
stacking copies of each graph into one graph, as a deep model whose layers repeat
would give: every copy's nodes, kernels and generated lines are renamed and
shifted (kernels and nodes `<name>_c<i>`, module instance `layers.<i>`). Every
`--instances` copies share one copy of the model file (`model_<g>.py` in a
temporary workspace), so each model line reaches that many instances, like a
block's line in a 48-layer transformer. The run is written to a temporary store
and opened with the real app under Textual's headless driver (`run_test`):

- first paint: app start to the first frame showing the run (status, the
  5,000-row kernel list, the model source), median of `--repeats` starts, each
  in a fresh process as a user's start is (its imports done before the clock
  starts); then the time until the first linked line's highlights are in all
  four panes;
- cursor move -> highlights: from moving the cursor one line to the linked lines
  being applied in the other panes (one store read off the UI thread: a model line
  from the file's source index, any other line `StoreBackend.query`; the redraw follows on
  the next frame), p50/p99 over `--moves` moves in each pane, next to the store's own
  time for the same reads.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

from kernelscope.run_record import FxNode, GraphRecord, RunRecord  # noqa: E402
from kernelscope.store import StoreBackend  # noqa: E402

SIZE = (160, 48)


def record(example: str) -> RunRecord:
    from kernelscope.engine.recorder import RecordOptions, record_factory

    options = RecordOptions(device="virtual-cuda", train=True, workspace=REPO)
    return record_factory(f"{REPO / 'examples' / example}.py:make", options)


def _lines(text: str) -> int:
    return len(text.splitlines())


def _text(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def stack_copies(graph: GraphRecord, copies: int, source_of=lambda index, file: file) -> GraphRecord:
    """One graph holding `copies` renamed copies of `graph`, texts concatenated, lines shifted;
    `source_of(copy, file)` names the model file a copy's nodes point at."""
    pre_nodes, post_nodes, kernels, wrapper_lines = [], [], [], []
    pre_texts, post_texts, wrapper_texts = [], [], []
    pre_offset = post_offset = wrapper_offset = 0
    for index in range(copies):
        suffix = f"_c{index}"

        def rename(names: list[str]) -> list[str]:
            return [name + suffix for name in names]  # noqa: B023

        def located(location):
            if location is None:
                return None
            return dataclasses.replace(location, file=source_of(index, location.file))  # noqa: B023

        def node(fx: FxNode, offset: int) -> FxNode:
            module = f"layers.{index}" + (f".{fx.module_path}" if fx.module_path else "")  # noqa: B023
            return dataclasses.replace(fx, name=fx.name + suffix, from_pre_grad=rename(fx.from_pre_grad),  # noqa: B023
                                       graph_line=fx.graph_line + offset if fx.graph_line > 0 else 0,
                                       module_path=module, source=located(fx.source),
                                       stack=[located(frame) for frame in fx.stack])

        pre_nodes += [node(fx, pre_offset) for fx in graph.pre_grad_nodes]
        post_nodes += [node(fx, post_offset) for fx in graph.post_grad_nodes]
        for kernel in graph.kernels:
            kernels.append(dataclasses.replace(
                kernel, name=kernel.name + suffix, nodes=rename(kernel.nodes),
                lines=[dataclasses.replace(line, nodes=rename(line.nodes)) for line in kernel.lines],
                inductor_nodes=None if kernel.inductor_nodes is None else rename(kernel.inductor_nodes),
                wrapper_lines=[line + wrapper_offset for line in kernel.wrapper_lines],
            ))
        wrapper_lines += [dataclasses.replace(line, line=line.line + wrapper_offset, nodes=rename(line.nodes))
                          for line in graph.wrapper_lines]
        pre_texts.append(_text(graph.pre_grad_text))
        post_texts.append(_text(graph.post_grad_text))
        wrapper_texts.append(_text(graph.wrapper_text))
        pre_offset += _lines(pre_texts[-1])
        post_offset += _lines(post_texts[-1])
        wrapper_offset += _lines(wrapper_texts[-1])
    return dataclasses.replace(
        graph, pre_grad_text="".join(pre_texts), post_grad_text="".join(post_texts),
        wrapper_text="".join(wrapper_texts), pre_grad_nodes=pre_nodes, post_grad_nodes=post_nodes,
        kernels=kernels, wrapper_lines=wrapper_lines, wrapper_attributable=graph.wrapper_attributable * copies,
        inductor_mapping=None,
    )


def big_run(run: RunRecord, kernels_wanted: int, instances: int, workspace: Path) -> RunRecord:
    """At least `kernels_wanted` kernels; every `instances` copies point at their own copy of the model file."""
    per_copy = sum(len(graph.kernels) for graph in run.graphs)
    copies = -(-kernels_wanted // per_copy)
    model = Path(run.target.rpartition(":")[0])
    model = (model if model.is_absolute() else Path(run.workspace) / model).resolve()
    for group in range(-(-copies // instances)):
        (workspace / f"model_{group}.py").write_text(model.read_text())

    def source_of(index: int, file: str) -> str:
        return str(workspace / f"model_{index // instances}.py") if Path(file).resolve() == model else file

    return dataclasses.replace(run, graphs=[stack_copies(graph, copies, source_of) for graph in run.graphs],
                               target=f"{workspace / 'model_0.py'}:make", workspace=str(workspace),
                               created=time.time())


async def first_paint(store_root: Path) -> tuple[float, float]:
    """(seconds to the first frame with the run on screen, seconds to the first frame with
    the first line's links in every pane). A frame is counted when the app hands it to
    the terminal (`App._display`); Pilot.pause() would also wait for the background
    reads that start after the first frame (it waits for the whole process to idle)."""
    from kernelscope.tui.app import KernelscopeApp
    from kernelscope.tui.kernel_list import KernelList

    started = time.perf_counter()
    app = KernelscopeApp(store_root)
    frames: list[float] = []
    display = app._display

    def counted(screen, renderable) -> None:
        display(screen, renderable)
        frames.append(time.perf_counter())

    app._display = counted

    async def next_frame() -> float:
        asked = time.perf_counter()
        while not frames or frames[-1] < asked:
            await asyncio.sleep(0.001)
        return frames[-1] - started

    async with app.run_test(size=SIZE):
        while app.details is None or app.view("source").path is None or not app.query_one(KernelList).rows:
            await asyncio.sleep(0.002)
        shown = await next_frame()
        while app.last_links is None:
            await asyncio.sleep(0.002)
        painted = await next_frame()
        return shown, painted


def first_paint_in_new_process(store_root: Path) -> tuple[float, float]:
    """`first_paint` in a fresh interpreter: starts in one process would share its heap
    and garbage collector (a later start pays for collecting an earlier one's objects)."""
    import subprocess

    done = subprocess.run([sys.executable, __file__, "--first-paint-of", str(store_root)],
                          capture_output=True, text=True, check=True)
    shown, painted = json.loads(done.stdout.strip().splitlines()[-1])
    return shown, painted


async def cursor_moves(store_root: Path, moves: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    from kernelscope.tui.app import KernelscopeApp

    app = KernelscopeApp(store_root)
    timings: dict[str, list[float]] = {}
    visited: dict[str, tuple[str, list[int]]] = {}
    async with app.run_test(size=SIZE) as pilot:
        while app.last_links is None or app.status.progress or not app.facts_loaded:
            await asyncio.sleep(0.01)
        await pilot.pause(0.5)  # the run is in: gutter marks, first files, kernel facts
        source = app.view("source")
        linked = sorted(source.markers)
        plan = {"source": (max(linked[0] - 2, 1), min(linked[-1] + 2, len(source.lines)))}
        for role in ("source", "post_grad", "kernel", "wrapper"):
            view = app.view(role)
            if role != "source":
                plan[role] = (max(view.cursor_line - 20, 1), min(view.cursor_line + 20, len(view.lines)))
            low, high = plan[role]
            view.focus()
            line, step = low, 1
            samples = []
            for _ in range(moves):
                if not low <= line + step <= high:
                    step = -step
                line += step
                started = time.perf_counter()
                view.move_cursor(line, center=True)  # announces the move even onto the same line
                while app.last_query != (role, line):
                    if time.perf_counter() - started > 60:
                        raise SystemExit(f"no highlights after 60 s for {role} line {line}: {app.status.error}")
                    await asyncio.sleep(0.0005)
                samples.append(time.perf_counter() - started)
            timings[role] = samples
            visited[role] = (view.path, sorted(range(low, high + 1)))
            if role == "source":  # end on the GELU line: its links open a Triton kernel in every pane
                gelu = linked[1]
                view.move_cursor(gelu, center=True)
                while app.last_query != ("source", gelu):
                    await asyncio.sleep(0.001)
            await pilot.pause()
    store_times: dict[str, list[float]] = {}
    with StoreBackend(store_root, create=False) as store:  # what the app asks the store, alone
        for role, (path, lines) in visited.items():
            store_times[role] = []
            if role == "source":
                store.source_file_index(path)  # built once per file, when the app opens it
            for line in lines:
                started = time.perf_counter()
                if role == "source":
                    store.source_line(path, line)
                else:
                    store.query(path, line, None)
                store_times[role].append(time.perf_counter() - started)
    return timings, store_times


def build(workspace: Path, kernels: int, instances: int) -> None:
    started = time.perf_counter()
    run = record("mlp")
    print(f"recorded examples/mlp.py --train: {sum(len(g.kernels) for g in run.graphs)} kernels "
          f"in {len(run.graphs)} graphs ({time.perf_counter() - started:.1f}s)")
    workspace.mkdir(parents=True, exist_ok=True)
    run = big_run(run, kernels, instances, workspace)
    started = time.perf_counter()
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(run)
    print(f"built a run of {sum(len(g.kernels) for g in run.graphs)} kernels, each model line in {instances} "
          f"instances (store write {time.perf_counter() - started:.1f}s)")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(share * (len(ordered) - 1))), len(ordered) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=5000)
    parser.add_argument("--moves", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--instances", type=int, default=48,
                        help="copies that share one model file: the instances each model line reaches (default 48)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--workspace", metavar="DIR",
                        help="build the run in DIR and keep it; reuse it when DIR/.kernelscope exists")
    parser.add_argument("--first-paint-of", metavar="STORE", help=argparse.SUPPRESS)  # one start, in this process
    args = parser.parse_args()
    if args.first_paint_of:
        import kernelscope.tui.app  # noqa: F401  (imports are not part of the start)

        print(json.dumps(asyncio.run(first_paint(Path(args.first_paint_of)))))
        return 0

    with tempfile.TemporaryDirectory(prefix="kernelscope-tui-bench-") as directory:
        workspace = Path(args.workspace or directory)
        store_root = workspace / ".kernelscope"
        if not (store_root / "kernelscope.sqlite").exists():
            build(workspace, args.kernels, args.instances)
        with StoreBackend(store_root, create=False) as store:
            summary = store.runs()[0]
            details = store.show(summary.id)
            wrapper_lines = max(store.locate(graph.files["wrapper"]).line_count for graph in details.graphs)
        kernel_count = summary.kernel_count
        print(f"run: {kernel_count} kernels in {summary.graph_count} graphs, largest wrapper {wrapper_lines} lines")

        paints = [first_paint_in_new_process(store_root) for _ in range(args.repeats)]
        shown = statistics.median(p[0] for p in paints)
        painted = statistics.median(p[1] for p in paints)
        print(f"first paint (median of {args.repeats}): {shown * 1000:.0f} ms (target <= 1000 ms); "
              f"first line's links in all four panes at {painted * 1000:.0f} ms")

        moves, store_times = asyncio.run(cursor_moves(store_root, args.moves))
        results = {"kernels": kernel_count, "graphs": summary.graph_count, "largest_wrapper_lines": wrapper_lines,
                   "first_paint_run_ms": round(shown * 1000, 1), "first_paint_links_ms": round(painted * 1000, 1),
                   "cursor_to_highlight_ms": {}}
        print(f"cursor move -> highlights in the other panes ({args.moves} moves per pane; target <= 50 ms):")
        for role, samples in moves.items():
            p50, p99 = percentile(samples, 0.5) * 1000, percentile(samples, 0.99) * 1000
            results["cursor_to_highlight_ms"][role] = {"p50": round(p50, 1), "p99": round(p99, 1),
                                                       "max": round(max(samples) * 1000, 1)}
            store_p50 = percentile(store_times[role], 0.5) * 1000
            results["cursor_to_highlight_ms"][role]["store_query_p50"] = round(store_p50, 1)
            print(f"  from the {role.replace('_', '-'):9} pane: p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
                  f"max {max(samples) * 1000:6.1f} ms   (the store read alone: p50 {store_p50:6.1f} ms)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
