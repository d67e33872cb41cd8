"""A run's timing decisions as text: the run summary of `compile`/`run`/`watch`, the
section `kernelscope show` prints and the list `kernelscope decisions` prints
(docs/decisions.md). Reads plain data only (record.Decision, RunDecisions)."""
from __future__ import annotations

from collections import Counter

from kernelscope.run_record import Decision, DecisionReplay

ORIGIN_ORDER = ("timed", "heuristic", "replayed", "guessed")
KIND_LABELS = {"pad_mm": "pad_mm", "mm_compute_bound": "pad_mm compute-bound test", "autotune": "max-autotune",
               "fusion_benchmark": "fusion benchmark", "triton_config": "launch config"}
LISTED_GUESSES = 5


def gpu_text(gpu: dict | None) -> str:
    if not gpu:
        return "no GPU"
    capability = "".join(str(part) for part in gpu.get("capability") or [])
    sms = f", {gpu['sm_count']} SMs" if gpu.get("sm_count") else ""
    return f"{gpu.get('name', '?')} (sm_{capability}{sms})"


def counts_text(decisions: list[Decision]) -> str:
    """`3 replayed · 2 guessed` (by origin; "none" when the run made none)."""
    counts = Counter(decision.origin for decision in decisions)
    return " · ".join(f"{counts[origin]} {origin}" for origin in ORIGIN_ORDER if counts[origin]) or "none"


def decision_text(decision: Decision, rule: bool = True) -> str:
    """`pad_mm aten.mm [10, s77] @ [s77, 16] torch.float32: pad (rule: ...)`."""
    what = f"{KIND_LABELS.get(decision.kind, decision.kind)} {decision.summary or decision.key[:80]}".strip()
    text = f"{what}: {decision.choice}"
    return f"{text} (rule: {decision.rule})" if rule else text


def summary_lines(decisions: list[Decision], replay: DecisionReplay | None, run_id: int | None = None) -> list[str]:
    """The run summary's lines: counts, where replayed ones came from, and the guessed ones
    (the first few; `kernelscope decisions RUN` lists every one)."""
    if not decisions and replay is None:
        return []
    source = f" (replayed from {replay.source})" if replay is not None else ""
    out = [f"timing decisions: {counts_text(decisions)}{source}"]
    guessed = [decision for decision in decisions if decision.origin == "guessed"]
    if guessed:
        out.append(f"{len(guessed)} decision(s) guessed{'' if replay else ' (no GPU recording: --decisions)'}:")
        out += [f"  {decision_text(decision)}" for decision in guessed[:LISTED_GUESSES]]
        if len(guessed) > LISTED_GUESSES:
            more = f"kernelscope decisions {run_id}" if run_id is not None else "kernelscope decisions RUN"
            out.append(f"  ... and {len(guessed) - LISTED_GUESSES} more ({more})")
    if replay is not None and replay.unused:
        kinds = Counter(KIND_LABELS.get(decision.kind, decision.kind) for decision in replay.unused)
        listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        out.append(f"{len(replay.unused)} recorded decision(s) no compile asked for ({listed}): "
                   "the code differs from the recording's there")
    return out


def summary_data(decisions: list[Decision], replay: DecisionReplay | None) -> dict:
    """The run summary's `decisions` (JSON)."""
    return {
        "counts": dict(Counter(decision.origin for decision in decisions)),
        "replayed_from": replay.source if replay is not None else None,
        "guessed": [{"kind": d.kind, "summary": d.summary, "choice": d.choice, "rule": d.rule, "key": d.key}
                    for d in decisions if d.origin == "guessed"],
        "unused": len(replay.unused) if replay is not None else 0,
    }


def section_lines(gpu: dict | None, decisions: list[Decision], replay: DecisionReplay | None,
                  every_launch: bool = False) -> list[str]:
    """What `kernelscope show` prints under "timing decisions" (launch configs counted, not
    listed, unless `every_launch`)."""
    out = [f"  GPU: {gpu_text(gpu)} · {counts_text(decisions)}"]
    if replay is not None:
        recorded = replay.recorded_on
        out.append(f"  replayed from {replay.source} (recorded on {gpu_text(recorded.get('gpu'))}, torch "
                   f"{recorded.get('torch', '?')}, triton {recorded.get('triton', '?')})")
    launches = [decision for decision in decisions if decision.kind == "triton_config"]
    for decision in decisions:
        if decision.kind == "triton_config" and not every_launch:
            continue
        out.append(f"  {decision.origin:9} {decision_text(decision, rule=False)}")
        out.append(f"            {decision.rule}")
    if launches and not every_launch:
        by_origin = Counter(decision.origin for decision in launches)
        out.append(f"  launch configs of {len(launches)} Triton kernel(s): "
                   + " · ".join(f"{by_origin[origin]} {origin}" for origin in ORIGIN_ORDER if by_origin[origin])
                   + " (kernelscope decisions RUN lists them)")
    if replay is not None and replay.unused:
        out.append(f"  recorded, never asked for ({len(replay.unused)}):")
        out += [f"    {decision_text(decision, rule=False)}" for decision in replay.unused[:LISTED_GUESSES]]
        if len(replay.unused) > LISTED_GUESSES:
            out.append(f"    ... and {len(replay.unused) - LISTED_GUESSES} more")
    return out
