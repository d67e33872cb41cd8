"""Why it recompiled, why it was not fused (store/parts/why.py; docs/why.md): written with a
run, answered at the model line (query, its --json), per file, and in the dump."""
from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import FC1_LINE, GELU_LINE, MLP_PATH, make_why_run, workspace  # noqa: F401  (fixture)
from test_dump_schema import canonical, expected_run

from kernelscope.api.answer import ask
from kernelscope.store import StoreBackend, validate_dump


@pytest.fixture
def why_store(workspace: Path):  # noqa: F811
    store = StoreBackend(workspace / ".kernelscope")
    store.write_run(make_why_run(workspace))
    yield store, workspace
    store.close()


def test_the_line_answers_with_its_guards_recompiles_and_refused_fusions(why_store):
    store, _ = why_store
    answer = ask(store, MLP_PATH, FC1_LINE)
    data = answer.to_dict()
    assert [(g["kind"], g["expression"], g["added_by"], g["source"]) for g in data["guards"]] == [
        ("shape", "x.size()[0] <= 16", "user code", "x.size()[0]"),
        ("shape", "x.size()[0] <= 2147483647", "inductor (_inductor/sizevars.py:819 in expect_true)", "x.size()[0]"),
        ("TENSOR_MATCH", "check_tensor(x, Tensor, ...)", "dynamo", ""),
    ]
    [recompile] = data["recompiles"]
    assert (recompile["compile_id"], recompile["failed_compile_id"], recompile["values"]) == (
        "0/1", "0/0", {"x.size()[0]": "16"})
    assert recompile["advice"].startswith("torch._dynamo.mark_dynamic(x, 0)")
    assert [line[1] for line in recompile["lines"]] == [FC1_LINE]
    [refusal] = data["not_fused"]
    assert (refusal["other_line"], refusal["reason"], refusal["scheduler_nodes"], refusal["cause"]) == (
        GELU_LINE, "node1 is extern or nop", ("op0", "op1"), "extern")
    assert (refusal["file"], refusal["line"], refusal["other_graph"]) == (MLP_PATH, FC1_LINE, "")
    assert refusal["kernel"] and refusal["other_kernel"] and refusal["kernel"] != refusal["other_kernel"]
    text = str(answer)
    assert "x.size()[0] <= 16  (shape, added by user code)" in text
    assert "guard of [0/0] failed" in text and "x.size()[0]=16" in text and "advice: torch._dynamo.mark_dynamic" in text
    assert f"at line {GELU_LINE}" in text and "extern: node1 is extern or nop" in text


def test_the_other_side_of_a_refusal_answers_too_and_a_plain_line_has_empty_lists(why_store):
    store, _ = why_store
    gelu = ask(store, MLP_PATH, GELU_LINE).to_dict()
    assert [(r["other_line"], r["scheduler_nodes"]) for r in gelu["not_fused"]] == [(FC1_LINE, ("op1", "op0"))]
    assert gelu["guards"] == [] and gelu["recompiles"] == []


def test_file_why_keeps_shape_guards_and_recompiles_per_line(why_store):
    store, _ = why_store
    view = store.run(1)
    found = view.file_why(MLP_PATH)
    assert set(found) == {FC1_LINE}
    assert [g.kind for g in found[FC1_LINE].guards] == ["shape", "shape"]  # Dynamo's own guards: asked per line
    assert len(found[FC1_LINE].recompiles) == 1
    assert len(view.guards()) == 3 and len(view.guard_failures()) == 1
    [pair] = view.not_fused()  # the run's list: both sides placed
    assert (pair.line, pair.other_line, pair.cause) == (FC1_LINE, GELU_LINE, "extern")


def test_the_dump_holds_the_why_records_and_validates(why_store):
    store, workspace = why_store
    data = store.dump(1)
    validate_dump(data)
    run = dict(data["run"])
    run.pop("coverage")
    assert canonical(run) == canonical(expected_run(make_why_run(workspace)))


def test_a_store_from_before_the_cause_column_answers_its_refusals_as_the_schedulers(why_store):
    """A version-6 store written before `fusion_refusals.cause` and `other_graph_id`: read as
    it is (a read-only store), each refusal is the scheduler's; opened for writing, it gains
    the columns and their index."""
    from kernelscope.store.parts import why

    store, workspace = why_store
    conn = store.conn
    conn.execute("DROP INDEX fusion_refusals_by_other_graph")
    conn.execute("ALTER TABLE fusion_refusals DROP COLUMN other_graph_id")
    conn.execute("ALTER TABLE fusion_refusals DROP COLUMN cause")
    conn.commit()
    [refusal] = why.line_why(conn, 1, MLP_PATH, FC1_LINE).not_fused
    assert (refusal.cause, refusal.other_line, refusal.other_graph) == ("scheduler", GELU_LINE, "")
    assert [ref.cause for ref in why.run_not_fused(conn, 1)] == ["scheduler"]
    assert [r["cause"] for r in why.dump_not_fused(conn, 1)] == ["scheduler"]
    store.close()
    with StoreBackend(workspace / ".kernelscope") as reopened:
        columns = {row[1] for row in reopened.conn.execute("PRAGMA table_info(fusion_refusals)")}
        assert {"cause", "other_graph_id"} <= columns
        indexes = {row[1] for row in reopened.conn.execute("PRAGMA index_list(fusion_refusals)")}
        assert "fusion_refusals_by_other_graph" in indexes
        assert [ref.cause for ref in reopened.run(1).not_fused()] == ["scheduler"]  # NULL: the scheduler's
