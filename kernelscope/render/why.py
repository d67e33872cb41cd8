"""A model line's "why" as text: the guards it installed, the recompiles it caused and the
fusions refused for its ops (store/parts/why.py; docs/why.md). Shared by `kernelscope
query`, `show`, the language server's hover and the TUI."""
from __future__ import annotations

from collections import Counter

from kernelscope.render.query_tree import Branch
from kernelscope.store.parts.why import SHAPE_KINDS, GuardRef, LineWhy, NotFusedRef, RecompileRef


def guard_text(guard: GuardRef) -> str:
    kind = "size made static" if guard.kind == "specialization" else guard.kind
    via = " (its symbol was made here)" if guard.line_via == "symbol" else ""
    return f"[{guard.compile_id}] {guard.expression}  ({kind}, added by {guard.added_by}){via}"


def recompile_text(recompile: RecompileRef) -> str:
    values = ", ".join(f"{source}={value}" for source, value in recompile.values.items())
    return (f"[{recompile.compile_id}] recompiled: guard of [{recompile.failed_compile_id}] failed: {recompile.guard}"
            + (f"  (the call had {values})" if values else ""))


def not_fused_text(refusal: NotFusedRef) -> str:
    """One line: this line's op and kernel, the other op's line and kernel (and graph, when
    a graph break put it in another), and why; a cause other than the scheduler's refusal
    is named first."""
    where = f"line {refusal.other_line}" if refusal.other_line else "no model line"
    graph = f", graph {refusal.other_graph}" if refusal.other_graph else ""
    cause = "" if refusal.cause == "scheduler" else f"{refusal.cause}: "
    return (f"[{refusal.compile_id}] {refusal.node} ({refusal.kernel or 'no kernel'}) not fused with "
            f"{refusal.other_node} at {where} ({refusal.other_kernel or 'no kernel'}{graph}): {cause}{refusal.reason}")


def dynamo_guard_summary(guards: list[GuardRef]) -> str:
    counts = Counter(guard.kind for guard in guards if guard.kind not in SHAPE_KINDS)
    return ", ".join(f"{kind} ×{count}" for kind, count in sorted(counts.items()))


def why_branches(why: LineWhy) -> list[Branch]:
    """Branches for a query tree: shape guards, Dynamo's other guards counted, recompiles
    (with advice), fusions refused."""
    branches = []
    shape = [guard for guard in why.guards if guard.kind in SHAPE_KINDS]
    others = [guard for guard in why.guards if guard.kind not in SHAPE_KINDS]
    if why.guards:
        children = [Branch(guard_text(guard), "yellow") for guard in shape]
        if others:
            children.append(Branch(f"Dynamo's guards on this line's values: {dynamo_guard_summary(others)} "
                                   "(--json lists each)", "dim"))
        branches.append(Branch(f"guards ({len(why.guards)})", "bold yellow", children))
    if why.recompiles:
        branches.append(Branch(f"recompiles ({len(why.recompiles)})", "bold red", [
            Branch(recompile_text(recompile), "red", [Branch(f"advice: {recompile.advice}", "green")]
                   if recompile.advice else []) for recompile in why.recompiles]))
    if why.not_fused:
        branches.append(Branch(f"not fused ({len(why.not_fused)})", "bold magenta",
                               [Branch(not_fused_text(refusal), "magenta") for refusal in why.not_fused]))
    return branches


def run_why_lines(failures: list[RecompileRef], guards: list[GuardRef]) -> list[str]:
    """`kernelscope show`'s section: each recompile's failed guard at its lines, with the
    values and advice; the guards counted by kind and who added them."""
    out = ["why it recompiled (docs/why.md)"]
    for failure in failures:
        lines = ", ".join(f"{file}:{line} `{code}`" for file, line, code in failure.lines) or "no user line"
        out.append(f"  {recompile_text(failure)}")
        out.append(f"    at {lines}")
        if failure.advice:
            out.append(f"    advice: {failure.advice}")
    if not failures:
        out.append("  (no recompile)")
    shape = Counter(f"{guard.kind} by {guard.added_by}" for guard in guards if guard.kind in SHAPE_KINDS)
    out.append(f"  guards: {len(guards)} ({len(guards) - sum(shape.values())} of Dynamo's"
               + "".join(f"; {count} {what}" for what, count in sorted(shape.items())) + ")")
    return out


def kept_apart_text(ref: NotFusedRef) -> str:
    """A run-level pair: both lines and kernels, the cause and reason."""
    here = f"line {ref.line}" if ref.line else "no model line"
    there = f"line {ref.other_line}" if ref.other_line else "no model line"
    graph = f" in {ref.other_graph}" if ref.other_graph else ""
    return (f"[{ref.compile_id}] {here} {ref.node} ({ref.kernel or 'no kernel'}) | {there} {ref.other_node} "
            f"({ref.other_kernel or 'no kernel'}{graph}) — {ref.cause}: {ref.reason}")


def run_not_fused_lines(refs: list[NotFusedRef], shown: int = 8) -> list[str]:
    """`kernelscope show`'s section: the pairs kept apart, counted by cause, the first few
    told (`show --json` and `query FILE:LINE` give every one)."""
    counts = Counter(ref.cause for ref in refs)
    out = ["why not fused (docs/why.md): " + ", ".join(f"{count} {cause}" for cause, count in sorted(counts.items()))]
    out += [f"  {kept_apart_text(ref)}" for ref in refs[:shown]]
    if len(refs) > shown:
        out.append(f"  … {len(refs) - shown} more (show --json lists each)")
    return out
