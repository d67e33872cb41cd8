"""`kernelscope show [RUN]`: one run in full."""
from __future__ import annotations

import argparse
from dataclasses import asdict

from kernelscope.text import distributed as distributed_text
from kernelscope.cli.common import (
    format_share,
    format_table,
    format_time,
    graph_break_details,
    new_parser,
    open_store,
    parse_run_id,
    print_json,
)
from kernelscope.store import RunDetails

COVERAGE_LABELS = {
    "kernel_lines": "kernel lines with nodes",
    "kernel_lines_specific": "kernel lines tied to one node",
    "wrapper_lines": "wrapper lines attributed",
    "forward_nodes_with_source": "forward nodes with source",
    "backward_nodes_with_source": "backward nodes with source",
    "kernel_agreement": "kernels agreeing with Inductor",
}


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "show",
        help="show one run: graphs, kernels, graph breaks, coverage",
        description="Show a run (the latest by default): its graphs with node and kernel counts, its "
        "kernels, graph breaks with the user line that caused them, recompiles, provenance coverage, "
        "warnings and timings; for a rank of a distributed job, which ranks compiled identical code, "
        "the graphs DDP split, and each graph's collectives in compute/communication order.",
        examples=["kernelscope show", "kernelscope show 3", "kernelscope show 3 --json",
                  "kernelscope show 3 --asm        # each Triton kernel's registers, spills, occupancy (sm_90)"],
    )
    parser.add_argument("run_id", nargs="?", type=parse_run_id, metavar="RUN", help="run id (default: latest)")
    parser.add_argument("--json", action="store_true", help="print the run as JSON")
    parser.add_argument("--asm", action="store_true",
                        help="below the kernel: compile the run's Triton kernels for its GPU where not done yet "
                        "and list each one's registers, spills, shared memory and occupancy")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        view = store.run(args.run_id)
        details, profile = view.details(), view.profile()  # profile: None unless a trace was attached
        if args.asm:
            from kernelscope.cli import asm_ask

            asm_ask.ensure_built(store, details.summary.id, quiet=args.json)
        asm = view.asm_builds()  # kernels compiled below Triton, if any
        distributed = view.distributed()  # rank, collectives, DDP splits
    if profile is not None:
        from kernelscope.profile.report import profile_data, render_profile
    if args.json:
        data = asdict(details)
        if profile is not None:
            data["profile"] = profile_data(profile)
        if asm:
            data["asm"] = {info.key: asdict(info) for info in asm.values()}
        if distributed_text.has_content(distributed):
            data["distributed"] = asdict(distributed)
        print_json(data)
    else:
        print(render(details, asm))
        if distributed_text.has_content(distributed):
            print("\n" + "\n".join(distributed_text.render_run(distributed)))
        if profile is not None:
            print("\n" + "\n".join(render_profile(profile_data(profile))))
    return 0


def render(details: RunDetails, asm: dict | None = None) -> str:
    summary = details.summary
    out = [
        f"run {summary.id}  {summary.target}",
        f"  created {format_time(summary.created)} · device {summary.device} · mode {summary.mode}"
        f"{' · dynamic' if summary.dynamic else ''} · provenance {summary.provenance}",
        f"  torch {summary.torch_version} · triton {summary.triton_version} · workspace {details.workspace}",
        "",
        "graphs",
    ]
    graph_rows = [[graph.compile_id, graph.kind, str(graph.pre_nodes), str(graph.post_nodes), str(graph.kernels),
                   graph.files.get("wrapper", "")] for graph in details.graphs]
    out.append(_indent(format_table(["compile id", "kind", "pre-grad nodes", "post-grad nodes", "kernels", "wrapper"],
                                    graph_rows)))
    out += ["", "kernels"]
    kernel_rows = [[kernel.graph, kernel.name, kernel.kind, str(len(kernel.nodes)), kernel.file or "-"]
                   for kernel in details.kernels]
    out.append(_indent(format_table(["graph", "name", "kind", "nodes", "file"], kernel_rows)) if kernel_rows
               else "  (none)")
    if asm:
        from kernelscope.cli.asm_query import resources_table

        out += ["", "below the kernel (registers and spills per thread, shared memory per block)"]
        out.append(_indent(resources_table(list(asm.values()))))
    out += ["", "graph breaks"]
    if not details.graph_breaks:
        out.append("  (none)")
    for brk in details.graph_breaks:
        where = f"{brk.file}:{brk.line}" if brk.file else "unknown location"
        out.append(f"  [{brk.compile_id}] {where}: {brk.reason}")
        if brk.code:
            out.append(f"      {brk.code}")
        out += graph_break_details(brk.explanation, brk.hints, brk.url, indent="      ")
    out += ["", "recompiles"]
    out += [f"  [{rec.compile_id}] {rec.reason}" for rec in details.recompiles] or ["  (none)"]
    out += ["", "coverage"]
    for key, label in COVERAGE_LABELS.items():
        ratio = summary.coverage[key]
        extra = f", {ratio['excluded']} without Inductor mapping" if "excluded" in ratio else ""
        out.append(f"  {label + ':':<32} {format_share(ratio)}{extra}")
    out += ["", "warnings"]
    out += [f"  {warning}" for warning in details.warnings] or ["  (none)"]
    out += ["", "timings"]
    out += [f"  {name + ':':<20} {seconds:.3f} s" for name, seconds in sorted(details.timings.items())] or ["  (none)"]
    out.append(f"  peak memory: {details.peak_memory_mb:.1f} MB")
    if details.execute_max_error is not None:
        out.append(f"  max error vs eager: {details.execute_max_error:.3g}")
    return "\n".join(out)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
