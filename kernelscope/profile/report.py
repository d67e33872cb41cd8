"""A run's profile as JSON-ready data and as text (profile, compile --profile, show).

Every time is per step. A kernel fused from several source lines counts once in
every total; in the per-line list it shows on each of its lines, marked shared.
"""
from __future__ import annotations

from kernelscope.store.parts.profiles import RunProfile, line_times


def format_time(us: float | None) -> str:
    """`12.3 us` under a millisecond, else `1.23 ms`."""
    if us is None:
        return "-"
    return f"{us:.1f} us" if us < 1000 else f"{us / 1000:.2f} ms"


def format_share(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def time_label(us: float | None, share: float | None) -> str:
    """What an editor shows next to a line or kernel: `0.42 ms · 31% of step`."""
    if us is None:
        return ""
    return f"{format_time(us)} · {format_share(share)} of step" if share is not None else format_time(us)


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def profile_data(profile: RunProfile, top: int = 10) -> dict:
    kernels = sorted(profile.kernels.values(), key=lambda k: (-k.device_time_us, k.graph, k.name))
    lines = sorted(line_times(profile).items(), key=lambda item: (-item[1][0], item[0]))
    return {
        **profile.summary(),
        "top_kernels": [
            {"graph": k.graph, "name": k.name, "kind": k.kind, "device_time_us": round(k.device_time_us, 3),
             "step_share": _rounded(k.step_share, 4),
             "calls_per_step": round(k.calls, 2), "shared": k.shared,
             "lines": [f"{file}:{line}" for file, line in k.lines]}
            for k in kernels[:top]
        ],
        "top_lines": [
            {"file": file, "line": line, "device_time_us": round(us, 3),
             "step_share": _rounded(profile.share(us), 4), "shared": shared}
            for (file, line), (us, shared) in lines[:top]
        ],
    }


def render_profile(data: dict) -> list[str]:
    """Text lines for profile_data(...)."""
    device_total = data["device_time_us"]

    def of_device(us: float) -> str:
        return f"{us / device_total * 100:.1f}% of device time" if device_total else "-"

    steps = (f"{data['steps']} step(s)" if data["step_markers"]
             else "the whole trace as one step (no ProfilerStep ranges)")
    out = [
        f"profile: {data['trace']} on {data['device'] or 'an unnamed device'}, {steps}",
        f"  step time {format_time(data['step_time_us'])} · device time {format_time(device_total)} per step",
        f"  on the run's kernels and extern calls: {format_time(data['attributed_us'])} "
        f"({of_device(data['attributed_us'])})",
        f"  on model source lines (kernels that reach one, each once): {format_time(data['on_lines_us'])} "
        f"({format_share(data['on_lines_step_share'])} of the step)",
        f"  in compiled graphs, on no recorded kernel: {format_time(data['in_graphs_other_us'])}",
        f"  outside the compiled graphs: {format_time(data['outside_graphs_us'])} "
        f"({of_device(data['outside_graphs_us'])})",
    ]
    for name, us in list(data["outside_graphs"].items())[:6]:
        out.append(f"      {format_time(us):>10}  {name}")
    for name, us in data["in_graphs_other"].items():
        out.append(f"      {format_time(us):>10}  in graph {name}")
    if data["top_kernels"]:
        out.append("  top kernels (per step; a fused kernel counts once):")
        for k in data["top_kernels"]:
            where = ", ".join(k["lines"][:4]) + (" ..." if len(k["lines"]) > 4 else "")
            shared = " shared" if k["shared"] else ""
            out.append(f"    {format_time(k['device_time_us']):>10} {format_share(k['step_share']):>6} of step  "
                       f"{k['name']} {k['graph']}{shared}  {where}")
    if data["top_lines"]:
        out.append("  top source lines (a shared kernel's time is on each of its lines):")
        for line in data["top_lines"]:
            shared = "  (shared)" if line["shared"] else ""
            out.append(f"    {format_time(line['device_time_us']):>10} {format_share(line['step_share']):>6} of step  "
                       f"{line['file']}:{line['line']}{shared}")
    for warning in data["warnings"]:
        out.append(f"  warning: {warning}")
    return out


def query_time_lines(result) -> list[str]:
    """What `query` prints about device time: the queried line's, then each kernel's."""
    profile = result.profile or {}
    step = profile.get("step_time_us")

    def label(us, shared):
        return time_label(us, us / step if step else None) + ("  shared" if shared else "")

    out = []
    seen_line = False
    for chain in result.graphs:
        for source in chain.sources:
            if source.file == result.location.path and source.line == result.line and not seen_line:
                out.append(f"this line: {label(source.device_time_us or 0.0, source.shared)}")
                seen_line = True
    for chain in result.graphs:
        for kernel in chain.kernels:
            if kernel.device_time_us is not None:
                out.append(f"{time_label(kernel.device_time_us, kernel.device_time_us / step if step else None)}  "
                           f"{kernel.name} [{chain.graph.compile_id}] {chain.graph.kind}"
                           + ("  shared" if kernel.shared else ""))
    out.append("shared: a kernel fused from several source lines; its whole time shows on each of them")
    out.append(f"per step of {profile.get('trace', '?')} ({profile.get('steps', '?')} steps on "
               f"{profile.get('device') or '?'}): step {format_time(step)}, outside the compiled graphs "
               f"{format_time(profile.get('outside_graphs_us'))}")
    return out
