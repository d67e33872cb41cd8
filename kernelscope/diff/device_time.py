"""Device time of two profiled runs side by side, and the `device-time` gate.

Both sides' `profile` (see `kernelscope dump`: per step, a fused kernel counted
once) are compared as totals, and kernel by kernel through the diff's own
pairing (by what a kernel computes, so a renamed fusion still pairs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TOLERANCE = 0.10  # the gate trips above +10% device time per step
MIN_DELTA_US = 1.0  # kernel changes smaller than this are noise on a small model


@dataclass
class KernelTimeChange:
    graph: str
    before: str | None  # kernel name in A (None: appeared)
    after: str | None
    before_us: float
    after_us: float

    @property
    def delta_us(self) -> float:
        return self.after_us - self.before_us


@dataclass
class DeviceTimeDiff:
    before: dict | None  # {"step_time_us", "device_time_us", "attributed_us", "outside_graphs_us"}; None: no profile
    after: dict | None
    kernels: list[KernelTimeChange] = field(default_factory=list)  # largest changes first
    tolerance: float = DEFAULT_TOLERANCE

    def ratio(self, key: str = "device_time_us") -> float | None:
        if not self.before or not self.after or not self.before[key]:
            return None
        return self.after[key] / self.before[key]


TOTAL_KEYS = ("step_time_us", "device_time_us", "attributed_us", "outside_graphs_us")


def compare_device_time(before: dict | None, after: dict | None, pairs) -> DeviceTimeDiff | None:
    """None when neither side has a profile. `pairs`: the diff's KernelPair list."""
    if before is None and after is None:
        return None
    result = DeviceTimeDiff(
        before={key: before[key] for key in TOTAL_KEYS} if before else None,
        after={key: after[key] for key in TOTAL_KEYS} if after else None,
    )
    if before and after:
        times_a = {(k["graph"], k["name"]): k["device_time_us"] for k in before["kernels"]}
        times_b = {(k["graph"], k["name"]): k["device_time_us"] for k in after["kernels"]}
        changes = []
        for pair in pairs:
            a, b = pair.before, pair.after
            a_us = times_a.get((a.graph, a.name), 0.0) if a else 0.0
            b_us = times_b.get((b.graph, b.name), 0.0) if b else 0.0
            if abs(b_us - a_us) >= MIN_DELTA_US:
                changes.append(KernelTimeChange((b or a).graph, a.name if a else None, b.name if b else None,
                                                a_us, b_us))
        result.kernels = sorted(changes, key=lambda c: -abs(c.delta_us))[:10]
    return result


def gate_reasons(diff: DeviceTimeDiff | None) -> list[str]:
    """Why the `device-time` gate trips: more device time per step than A plus the
    tolerance, or a side without a profile (the gate cannot pass on no evidence)."""
    if diff is None or diff.before is None or diff.after is None:
        missing = "A and B have" if diff is None else "A has" if diff.before is None else "B has"
        return [f"device-time: {missing} no profile — attach one (`kernelscope profile TRACE`, "
                "`compile --profile`) before dumping"]
    ratio = diff.ratio()
    if ratio is not None and ratio > 1 + diff.tolerance:
        worst = [f"{c.after or c.before} {c.before_us:.1f} -> {c.after_us:.1f} us" for c in diff.kernels[:3]
                 if c.delta_us > 0]
        return [f"device time per step {diff.before['device_time_us']:.1f} -> {diff.after['device_time_us']:.1f} us "
                f"(+{(ratio - 1) * 100:.1f}%, over the {diff.tolerance * 100:.0f}% tolerance)"
                + (f"; slower: {', '.join(worst)}" if worst else "")]
    return []


def render_lines(diff: DeviceTimeDiff | None) -> list[str]:
    """The report's device-time section (text and markdown alike)."""
    if diff is None:
        return []
    if diff.before is None or diff.after is None:
        return [f"device time: only {'B' if diff.before is None else 'A'} has a profile"]
    out = ["device time per step (a fused kernel counted once):"]
    for key, label in (("device_time_us", "all device work"), ("attributed_us", "on kernels and extern calls"),
                       ("outside_graphs_us", "outside the compiled graphs"), ("step_time_us", "step wall time")):
        a, b = diff.before[key], diff.after[key]
        percent = f" ({(b / a - 1) * 100:+.1f}%)" if a else ""
        out.append(f"  {label}: {a:.1f} -> {b:.1f} us{percent}")
    for change in diff.kernels:
        name = change.after if change.before == change.after else f"{change.before} -> {change.after}"
        out.append(f"  {change.delta_us:+.1f} us  {name} {change.graph} "
                   f"({change.before_us:.1f} -> {change.after_us:.1f} us)")
    return out
