"""Small text formatting shared by the CLI and the Python API: times, coverage ratios,
tables and a graph break's details."""
from __future__ import annotations

import time


def format_time(unix_time: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(unix_time))


def format_share(ratio: dict) -> str:
    """A coverage ratio as `93.8% (15/16)`, or `n/a` when there was nothing to count."""
    if ratio["share"] is None:
        return "n/a"
    return f"{ratio['share'] * 100:.1f}% ({ratio['covered']}/{ratio['total']})"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header, *rows]]
    return "\n".join(lines)


def graph_break_details(explanation: str, hints: list[str], url: str, indent: str = "    ") -> list[str]:
    """Dynamo's explanation, hints and documentation page of a graph break, one per line."""
    lines = [f"{indent}why: {explanation}"] if explanation else []
    lines += [f"{indent}hint: {hint}" for hint in hints]
    return lines + ([f"{indent}more: {url}"] if url else [])


def format_bytes(count: int) -> str:
    """1536 -> '1.5 KiB' (binary units, as the caching allocator's snapshots print)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
