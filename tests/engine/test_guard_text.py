"""compile_text/guards.py: torch's guard and recompile records (as torch 2.13 writes them,
file names interned) read into Guard and GuardFailure records, without torch."""
from __future__ import annotations

import json

from kernelscope.compile_text.guards import GuardReader, TraceEntry, failures, resolve_lines, sources_in

TORCH = "/venv/lib/python3.11/site-packages/torch/"
MODEL = "/ws/examples/recompile_shape.py"
STRINGS = {0: MODEL, 1: TORCH + "fx/experimental/symbolic_shapes.py", 2: TORCH + "_inductor/sizevars.py",
           3: TORCH + "_dynamo/variables/tensor.py", 4: TORCH + "_inductor/scheduler.py"}


def frame(file: int, line: int, name: str, loc: str = "") -> dict:
    return {"filename": file, "line": line, "name": name, "loc": loc}


def read(*entries: TraceEntry):
    return GuardReader(STRINGS, (TORCH,)).read(entries)


SYMBOL = TraceEntry("create_symbol", {"create_symbol": {
    "symbol": "s77", "val": "3", "source": "L['x'].size()[0]",
    "user_stack": [frame(0, 21, "forward", "n = x.shape[0]")]}}, None, "0/1")


def test_a_shape_guard_from_a_branch_is_in_the_users_names_at_its_line():
    [guard] = read(SYMBOL, TraceEntry("guard_added_fast", {"guard_added_fast": {
        "expr": "s77 <= 4", "user_stack": [frame(0, 23, "forward", "if n > 4:")],
        "stack": [frame(3, 2606, "evaluate_expr"), frame(1, 8058, "_log_guard")]}}, None, "0/1"))
    assert (guard.kind, guard.expression, guard.raw, guard.symbols) == (
        "shape", "x.size()[0] <= 4", "s77 <= 4", {"s77": "x.size()[0]"})
    assert (guard.added_by, guard.source.line, guard.source.code, guard.source_via) == (
        "user code", 23, "if n > 4:", "guard")


def test_a_guard_torch_added_names_who_asked_and_sits_at_the_symbols_line():
    [guard] = read(SYMBOL, TraceEntry("guard_added_fast", {"guard_added_fast": {
        "expr": "s77 <= 4096", "user_stack": [],
        "stack": [frame(4, 4012, "can_fuse"), frame(2, 819, "expect_true"), frame(1, 8058, "_log_guard")]}},
        None, "0/1"))
    assert guard.added_by == "inductor (_inductor/sizevars.py:819 in expect_true)"
    assert (guard.source.line, guard.source_via) == (21, "symbol")


def test_a_specialization_says_what_was_made_static_and_why():
    [guard] = read(TraceEntry("symbolic_shape_specialization", {"symbolic_shape_specialization": {
        "symbol": "s77", "sources": ["L['x'].size()[0]"], "value": "8", "reason": "range_refined_to_singleton",
        "user_stack": [frame(0, 6, "f", "if n == 8:")], "stack": [frame(3, 2606, "evaluate_expr")]}}, None, "0/2"))
    assert (guard.kind, guard.expression, guard.source.line) == (
        "specialization", "x.size()[0] == 8 (range_refined_to_singleton)", 6)


def test_dynamos_guard_tree_gives_each_guard_its_line_without_object_ids():
    start = TraceEntry("dynamo_start", {"dynamo_start": {"stack": [frame(0, 20, "forward")]}}, None, "0/0")
    tree = ("TREE_GUARD_MANAGER:\n+- RootGuardManager\n"
            "| +- GLOBAL_STATE: ___check_global_state() against {\"num_threads\":2}\n"
            "| | +- TYPE_MATCH: ___check_type_id(L['x'], 94185786042928), type=<class 'torch.Tensor'>  "
            "# n = x.shape[0]  # examples/recompile_shape.py:21 in forward (HINT: type Tensor)\n"
            "| | +- ID_MATCH: ___check_obj_id(G['torch'], 140689126267440)  # return F.linear(x)  "
            "# nn/modules/linear.py:134 in forward\n")
    guards = read(start, TraceEntry("dynamo_cpp_guards_str", {"dynamo_cpp_guards_str": {}}, tree, "0/0"))
    assert [(g.kind, g.expression, g.source and g.source.line) for g in guards] == [
        ("GLOBAL_STATE", "___check_global_state()", None),
        ("TYPE_MATCH", "___check_type_id(x, <id>), type=<class 'torch.Tensor'>", 21),
        ("ID_MATCH", "___check_obj_id(G['torch'], <id>)", None),  # torch's own file: no user line
    ]
    assert guards[1].source.file == MODEL and all(g.added_by == "dynamo" for g in guards)


def test_a_recompile_reason_gives_the_failed_guard_its_lines_and_the_values():
    reason = ("0/1: 2 <= x.size()[0] <= 4  # n = x.shape[0]  # examples/recompile_shape.py:21 in forward (user code "
              "shown is first use of this value) and if n > 4:  # examples/recompile_shape.py:23 in forward "
              "(_dynamo/variables/tensor.py:2606 in evaluate_expr)")
    mismatch = "0/0: tensor 'x' size mismatch at index 0. expected 2, actual 8"
    found = failures(json.dumps([reason, mismatch]), {reason: {"x.size()[0]": "8"}})
    resolve_lines(found, [MODEL])
    first, second = found
    assert (first.failed_compile_id, first.guard, first.values) == (
        "0/1", "2 <= x.size()[0] <= 4", {"x.size()[0]": "8"})
    assert [(line.file, line.line, line.code) for line in first.lines] == [
        (MODEL, 21, "n = x.shape[0]"), (MODEL, 23, "if n > 4:")]
    assert (second.failed_compile_id, second.lines, second.values) == ("0/0", [], {})
    [plain] = failures(mismatch, {})  # torch writes a single reason as plain text
    assert plain.guard == "tensor 'x' size mismatch at index 0. expected 2, actual 8"
    assert sources_in(mismatch) == [("x", "size", 0)] and sources_in(reason) == [("x", "size", 0)]
