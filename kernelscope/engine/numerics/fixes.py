"""Acting on a divergence: recompile with the diverging line left to eager, and with
Inductor's `emulate_precision_casts`, and say whether the divergence is gone.

Each fix is a numerics recording of its own (the same target, the same inputs: a factory is
called again, seeded as the user seeded it); the fixes' runs are not stored, what they found
is kept in the main run's report (`NumericsReport.fixes`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from kernelscope.engine.record_options import RecordOptions
from kernelscope.run_record import NumericsFix, NumericsReport, RunRecord


def _still_over(report: NumericsReport | None) -> bool:
    return report is None or any(output.over for output in report.outputs)


def try_fixes(record: Callable[[RecordOptions], RunRecord], options: RecordOptions,
              report: NumericsReport) -> list[NumericsFix]:
    """The fixes for `report`'s first divergence (none when there is none)."""
    first = report.first_divergence
    if first is None:
        return []
    attempts = []
    if first.source is not None:
        recorded = Path(first.source.file)  # as Python imported it: relative to where it ran, or absolute
        line = (str((recorded if recorded.is_absolute() else options.workspace / recorded).resolve()),
                first.source.line)
        attempts.append(("eager_line", f"{first.source.file}:{first.source.line} left to eager",
                         dataclasses.replace(options, eager_lines=[line])))
    attempts.append(("emulate_precision_casts", "torch._inductor.config.emulate_precision_casts=True",
                     dataclasses.replace(options, emulate_precision_casts=True)))
    fixes = []
    for kind, what, fix_options in attempts:
        fix_options.on_phase("numerics", f"recompiling: {what}")
        try:
            fixed = record(fix_options).numerics
        except Exception as error:  # noqa: BLE001 - a fix that fails to compile is reported, not raised
            fixes.append(NumericsFix(kind=kind, what=what, gone=False, error=f"{type(error).__name__}: {error}"))
            continue
        fixes.append(NumericsFix(kind=kind, what=what, gone=not _still_over(fixed),
                                 first_divergence=fixed.first_divergence if fixed is not None else None))
    return fixes
