"""Upstream fixes kernelscope applies while recording (engine/torch_fixes.py): each is
installed only where torch lacks it, removed afterwards, and named in a run only when it
changed the compile."""
from __future__ import annotations

import pytest


def test_identity_of_an_integer_compares_while_recording():
    import sympy
    from torch.utils._sympy.functions import Identity, Min

    from kernelscope.engine import torch_fixes

    had_fix = "_eval_evalf" in vars(Identity)
    expression = lambda: Min(sympy.Integer(0), sympy.Integer(-1) + Identity(sympy.Integer(0)))  # noqa: E731
    with torch_fixes.upstream_fixes() as applied:
        # T5's relative-position bucket in the padded attention bias: compares, and evaluates to -1
        assert float(expression().evalf()) == -1.0
        assert Min(sympy.Integer(0), sympy.Symbol("x") + Identity(sympy.Symbol("y"))).has(Identity)
    assert ("_eval_evalf" in vars(Identity)) == had_fix  # removed again
    if not had_fix:  # this torch has the bug: the fix was used, and the run would say so
        assert applied.used == {"identity_evalf": applied.used["identity_evalf"]} and applied.used["identity_evalf"] > 0
        (warning,) = applied.warnings("2.13.0+cpu")
        assert "pytorch/pytorch#175975" in warning and "fails on torch 2.13.0+cpu" in warning
        sympy.core.cache.clear_cache()
        with pytest.raises(ValueError, match="is not comparable"):
            expression()


def test_a_fix_that_changed_nothing_is_not_named():
    from kernelscope.engine import torch_fixes

    with torch_fixes.upstream_fixes() as applied:
        pass
    assert applied.warnings("2.13.0") == []
