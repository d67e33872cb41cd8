"""Upstream fixes for torch bugs that stop a recording, applied while kernelscope records.

Each fix is one that PyTorch itself made (or reviewed) for a bug its released version
still has; it is installed only where the patched point lacks it (a patch point that
adds, declared in patch_points.py: "upstream fixes"), removed afterwards, and the run
names it when it changed the compile (`RunRecord.warnings`), so nobody mistakes a
recording for what plain torch.compile does on that torch.

- `identity_evalf`: torch 2.13's Inductor fails on index expressions such as
  `Min(0, -1 + Identity(0))` ("The argument '-1 + ((0))' is not comparable"), reached by
  Hugging Face T5/MT5's relative-position bucket fused into the padded efficient-attention
  bias (scheduler `merge_loops` -> `simplify_loops`). `Identity` says it is a number but
  cannot be evaluated, so SymPy cannot compare sums of it. The fix of pytorch/pytorch#175975
  gives `Identity` an `_eval_evalf` that unwraps comparable integer constants.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from kernelscope.engine import patch_points, patching


@dataclass
class FixesApplied:
    """Which fixes changed a compile while installed (their names -> times used)."""

    used: dict[str, int] = field(default_factory=dict)

    def note(self, name: str) -> None:
        self.used[name] = self.used.get(name, 0) + 1

    def warnings(self, torch_version: str) -> list[str]:
        return [f"applied {DESCRIPTIONS[name]} while compiling ({count} time(s)): a plain torch.compile of this "
                f"model fails on torch {torch_version}" for name, count in sorted(self.used.items())]


DESCRIPTIONS = {
    "identity_evalf": "the fix of pytorch/pytorch#175975 (Inductor index expressions with Identity(<integer>) "
                      "that SymPy cannot compare)",
}


@contextlib.contextmanager
def upstream_fixes():
    """Install every fix this torch lacks; yields the FixesApplied that notes their use."""
    applied = FixesApplied()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_identity_evalf(applied))
        yield applied


@contextlib.contextmanager
def _identity_evalf(applied: FixesApplied):
    point = patch_points.IDENTITY_EVALF
    if not point.present():  # this torch has the fix (or its own), or no Identity at all
        yield
        return

    def _eval_evalf(self, prec):
        argument = self.args[0]
        if argument.is_Integer and argument.is_comparable:
            applied.note("identity_evalf")
            return argument
        return None

    with patching.replaced(point, _eval_evalf):
        yield
