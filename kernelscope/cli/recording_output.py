"""What `compile` and `run` share: target options, the progress display, writing
the run into the store and printing its summary (or JSON)."""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from kernelscope.api.recording import write_run
from kernelscope.api.store import Run
from kernelscope.cli.common import add_store_argument, format_share, graph_break_details
from kernelscope.cli.progress import phase_display
from kernelscope.errors import UserError
from kernelscope.render import decisions as decisions_view
from kernelscope.render import distributed as distributed_view
from kernelscope.store import StoreBackend, dump_json

COVERAGE_ORDER = [
    ("kernel_lines", "kernel body lines attributed to post-grad nodes"),
    ("kernel_lines_specific", "  ... to the one node that produced them (not shared indexing)"),
    ("wrapper_lines", "wrapper lines attributed"),
    ("forward_nodes_with_source", "forward post-grad nodes traced to a source line"),
    ("backward_nodes_with_source", "backward post-grad nodes traced to a source line"),
    ("kernel_agreement", "kernels agreeing with Inductor's own mapping"),
]


def add_target_arguments(parser) -> None:
    """--target, --execute and --decisions, shared by compile, run and watch."""
    parser.add_argument(
        "--target", dest="target_device", default="auto",
        choices=["auto", "cuda", "virtual-cuda", "cpu-triton", "cpu"],
        help="device target: auto = cuda with a GPU, else virtual-cuda (default: auto); cpu = Inductor's "
             "C++ kernels for CPU tensors, compiled and run",
    )
    parser.add_argument("--execute", action="store_true",
                        help="cpu-triton: run the kernels in Triton's interpreter and report the "
                             "max error against eager")
    parser.add_argument("--decisions", metavar="RUN|DUMP|FILE",
                        help="virtual-cuda: replay a GPU's timing decisions (pad_mm, max-autotune, launch configs) "
                             "recorded by a --target cuda run: a run of the store (3, latest), its dump, or a "
                             "decisions file; `none` replays nothing. Default: [tool.kernelscope] decisions in "
                             "pyproject.toml, else the store's decisions.json (docs/decisions.md)")


def resolve_decisions(args):
    """The DecisionSet `--decisions` (or the workspace's default) names, or None."""
    from kernelscope.decisions import resolve

    return resolve(getattr(args, "decisions", None), Path(args.store), Path.cwd())


def run_overview(run) -> dict:
    """The graphs, graph breaks and recompiles of a RunRecord, for summaries."""
    return {
        "graphs": [{"compile_id": g.compile_id, "kind": g.kind,
                    "kernels": sum(1 for k in g.kernels if k.kind != "extern"),
                    # C++ kernels of Inductor's CPU backend, named only where there are some
                    **({"cpp_kernels": cpp} if (cpp := sum(1 for k in g.kernels if k.kind == "cpp")) else {}),
                    "extern_calls": sum(1 for k in g.kernels if k.kind == "extern"),
                    # a higher-order op's subgraph: its label (absent for a graph of its own)
                    **({"subgraph": g.subgraph.label} if g.subgraph is not None else {})} for g in run.graphs],
        "graph_breaks": [{"reason": b.reason, "file": b.source.file if b.source else None,
                          "line": b.source.line if b.source else None, "explanation": b.explanation,
                          "hints": b.hints, "url": b.url} for b in run.graph_breaks],
        "recompiles": [{"compile_id": r.compile_id, "reason": r.reason} for r in run.recompiles],
    }


def add_recording_arguments(parser) -> None:
    add_store_argument(parser)
    add_target_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the run summary as JSON")
    parser.add_argument("--dump", metavar="FILE",
                        help="also write the run's deterministic dump (as `kernelscope dump`) to FILE, "
                             "e.g. a CI baseline for `kernelscope diff`")
    parser.add_argument("--asm", action="store_true",
                        help="also compile every Triton kernel below Triton now (PTX, SASS, registers, "
                             "spills; ~1 s a kernel); without it that happens on first ask "
                             "(`query --asm`, `show --asm`)")


def record_and_store(args, record, after_store=None) -> int:
    """record(on_phase) -> RunRecord; then store it and report. Returns the exit code.

    The run is written by the Python API's `write_run` (what `kernelscope.record` writes
    with) and read back through its `Run`. after_store(store, run_id) -> dict, if given,
    runs once the run is stored (e.g. attaching `--profile`'s trace); its dict is the
    summary's "profile"."""
    started = time.perf_counter()
    with phase_display(enabled=not args.json) as on_phase:
        # With --json, stdout carries the JSON alone: the model's prints go to stderr.
        user_output = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with user_output:
            run = record(on_phase)
        on_phase("store", args.store)
        store_started = time.perf_counter()
        stored = write_run(run, args.store)
        with stored.store:
            run_id = stored.id
            store_seconds = time.perf_counter() - store_started
            asm = _build_asm(stored.store.backend, run_id, on_phase) if getattr(args, "asm", False) else None
            coverage = stored.summary.coverage
            user_lines = stored.view.user_kernel_line_counts()  # a program's own Triton kernels, line for line
            distributed = stored.distributed  # rank, collectives, DDP splits
            if args.dump:
                _write_dump(stored, args.dump)
            profile = after_store(stored.store.backend, run_id) if after_store is not None else None
            numerics = _numerics_summary(stored) if run.numerics is not None else None
    timings = {**run.timings, "store": round(store_seconds, 4),
               **({"asm": asm["seconds"]} if asm else {}),
               "total": round(time.perf_counter() - started, 4)}
    summary = {
        "run": run_id,
        "store": str(args.store),
        "target": run.target,
        "device": run.device,
        "mode": run.mode,
        "provenance": run.provenance,
        "torch": run.torch_version,
        **run_overview(run),
        "coverage": coverage,
        "timings": timings,
        "peak_memory_mb": run.peak_memory_mb,
        "execute_max_error": run.execute_max_error,
        "warnings": run.warnings,
    }
    if run.aot_package is not None:  # --aot: the package kept in the run's folder (docs/aot.md)
        package = run.config["aot_package"]
        summary["aot_package"] = {"path": f"{args.store}/runs/{run_id}/{package['file']}",
                                  "bytes": package["bytes"], "files": len(package["files"])}
    if user_lines[1]:
        summary["user_kernel_lines"] = {"covered": user_lines[0], "total": user_lines[1],
                                        "share": round(user_lines[0] / user_lines[1], 4)}
    if run.decisions or run.replay is not None:
        summary["decisions"] = {**decisions_view.summary_data(run.decisions, run.replay),
                                "lines": decisions_view.summary_lines(run.decisions, run.replay, run_id)}
    if profile is not None:
        summary["profile"] = profile
    if numerics is not None:
        summary["numerics"] = numerics
    if asm is not None:
        summary["asm"] = asm
    if distributed_view.has_content(distributed):
        summary["distributed"] = distributed_view.overview(distributed)
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    else:
        print(render_summary(summary))
    return 0


def _numerics_summary(stored: Run) -> dict | None:
    """`run --numerics`: the run's numerics as `kernelscope numerics --json` gives them, and as text."""
    from kernelscope.render.numerics import report_lines

    report = stored.numerics
    if report is None:
        return None
    return {**(stored.numerics_dict() or {}), "text": report_lines(report, kernels=False)}


def _build_asm(store: StoreBackend, run_id: int, on_phase) -> dict:
    """--asm: every Triton kernel of the run compiled below Triton, in this process (the
    engine is loaded already)."""
    from kernelscope.engine.asm_build import build_run_asm

    summary = build_run_asm(store, run_id, on_kernel=lambda done, total, name: on_phase(
        "asm", f"{done + 1}/{total} {name}"))
    return summary.to_dict()


def _write_dump(run: Run, path: str) -> None:
    text = dump_json(run.dump())
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"run {run.id} is stored, but --dump cannot write {path}: {error.strerror} — "
                        f"write it with `kernelscope dump --run {run.id} -o FILE`") from error


def render_overview(summary: dict) -> list[str]:
    """The lines for a summary's `run_overview` part: graphs, kernels, breaks, recompiles."""
    cpp = sum(g.get("cpp_kernels", 0) for g in summary["graphs"])
    kernels = sum(g["kernels"] for g in summary["graphs"]) - cpp
    externs = sum(g["extern_calls"] for g in summary["graphs"])
    graphs = ", ".join(f"[{g['compile_id']}] {g['kind']}" for g in summary["graphs"] if not g.get("subgraph"))
    subgraphs = [g["subgraph"] for g in summary["graphs"] if g.get("subgraph")]
    out = [
        f"  {len(summary['graphs']) - len(subgraphs)} graph(s): {graphs}",
        *([f"  {len(subgraphs)} subgraph(s): {'; '.join(subgraphs)}"] if subgraphs else []),
        "  " + ", ".join([*([f"{kernels} Triton kernel(s)"] if kernels or not cpp else []),
                          *([f"{cpp} C++ kernel(s)"] if cpp else []), f"{externs} extern call(s)"]),
    ]
    for brk in summary["graph_breaks"]:
        where = f"{brk['file']}:{brk['line']}" if brk["file"] else "unknown location"
        out.append(f"  graph break at {where}: {brk['reason']}")
        out += graph_break_details(brk.get("explanation", ""), brk.get("hints", []), brk.get("url", ""))
    for recompile in summary["recompiles"]:
        out.append(f"  recompile [{recompile['compile_id']}]: {recompile['reason'][:120]}")
    return out


def render_summary(summary: dict) -> str:
    out = [
        f"recorded run {summary['run']} of {summary['target']} "
        f"({summary['device']}, {summary['mode']}, torch {summary['torch']}) into {summary['store']}",
        *render_overview(summary),
    ]
    out.append("  coverage:")
    for key, label in COVERAGE_ORDER:
        if key in summary["coverage"]:
            out.append(f"    {label}: {format_share(summary['coverage'][key])}")
    if summary.get("user_kernel_lines"):
        out.append(f"    user Triton kernel lines linked to the user's kernel source: "
                   f"{format_share(summary['user_kernel_lines'])}")
    if summary.get("distributed"):
        out.extend(f"  {line}" for line in distributed_view.render_overview(summary["distributed"]))
    if summary.get("aot_package"):
        package = summary["aot_package"]
        out.append(f"  AOTInductor package: {package['path']} ({package['bytes']:,} bytes, {package['files']} files)")
    if summary["execute_max_error"] is not None:
        out.append(f"  executed in Triton's interpreter: max error vs eager {summary['execute_max_error']:.3g}")
    phases = " · ".join(f"{k} {v:.2f}s" for k, v in summary["timings"].items())
    out.append(f"  time: {phases} · peak memory {summary['peak_memory_mb']:.0f} MB")
    for warning in summary["warnings"]:
        out.append(f"  warning: {warning}")
    if summary.get("decisions"):
        out.extend(f"  {line}" for line in summary["decisions"]["lines"])
    if summary.get("asm"):
        asm = summary["asm"]
        failed = f", {len(asm['failed'])} failed: {'; '.join(asm['failed'][:3])}" if asm["failed"] else ""
        out.append(f"  below the kernel: {asm['built']} kernel(s) compiled to PTX and SASS in {asm['seconds']:.1f}s"
                   f"{failed} (kernelscope show {summary['run']} --asm)")
    if summary.get("numerics"):
        out.extend(f"  {line}" for line in summary["numerics"]["text"])
    if summary.get("profile"):
        from kernelscope.profile.report import render_profile

        out.extend(f"  {line}" for line in render_profile(summary["profile"]))
    out.append(f"  next: kernelscope show {summary['run']}   ·   kernelscope query FILE:LINE")
    return "\n".join(out)
