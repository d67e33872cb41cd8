"""`diff --fail-on new-recompile,new-guard` (docs/why.md): a shape guard or a recompile's
failed guard at a line the baseline does not have trips the gate; one that went away does not."""
from __future__ import annotations

from synthetic_runs import FC1_LINE, MLP_PATH, make_mlp_run, make_why_run, workspace  # noqa: F401  (fixture)

from kernelscope.diff import compare_runs, diff_side, evaluate_gates, parse_gates
from kernelscope.diff.report import render
from kernelscope.store import StoreBackend


def _dumps(workspace):  # noqa: F811
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
        store.write_run(make_why_run(workspace))
        return store.run(1).dump(), store.run(2).dump()


def test_new_guards_and_guard_failures_trip_their_gates(workspace):  # noqa: F811
    plain, why = _dumps(workspace)
    diff = compare_runs(diff_side(plain, "base"), diff_side(why, "new"))
    results = {r.gate: r for r in evaluate_gates(diff, parse_gates(["new-recompile,new-guard"]))}
    assert results["new-guard"].tripped and results["new-recompile"].tripped
    assert results["new-guard"].reasons == [
        f"new guard at {MLP_PATH}:{FC1_LINE}: x.size()[0] <= 16 (shape, added by user code)",
        f"new guard at {MLP_PATH}:{FC1_LINE}: x.size()[0] <= 2147483647 "
        "(shape, added by inductor (_inductor/sizevars.py:819 in expect_true))",
    ]
    assert results["new-recompile"].reasons == [
        f"new recompile at {MLP_PATH}:{FC1_LINE}: tensor 'x' size mismatch at index 0. expected 8, actual 16 "
        "([0/1] after [0/0])"]
    text = render(diff, [], 0, "text")
    assert "shape guards:" in text and "guard failures (recompile causes):" in text


def test_guards_that_went_away_do_not_trip_and_the_same_run_gives_no_change(workspace):  # noqa: F811
    plain, why = _dumps(workspace)
    back = compare_runs(diff_side(why, "new"), diff_side(plain, "base"))
    assert [c["status"] for c in back.guards] == ["gone", "gone"] and back.guard_failures[0]["status"] == "gone"
    assert not any(r.tripped for r in evaluate_gates(back, parse_gates(["new-recompile,new-guard"])))
    same = compare_runs(diff_side(why, "a"), diff_side(why, "b"))
    assert same.guards == [] and same.guard_failures == []
