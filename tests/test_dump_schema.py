"""`dump`: deterministic JSON that mirrors the record, and the JSON Schema it is checked against."""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json

import pytest
from synthetic_runs import LIBRARY_FILE, make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)

from kernelscope import record as record_module
from kernelscope.record import RunRecord
from kernelscope.store import InvalidDumpError, Store, dump_json, load_schema, schema_problems, validate_dump
from kernelscope.store.dump import DUMP_FIELD_CHANGES


def canonical(value):
    """`value` with every list sorted, to compare content regardless of order."""
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((canonical(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


def expected_run(record: RunRecord, run_id: int) -> dict:
    """What the dump of `record` must hold, built from the dataclasses independently of the store."""
    prefix = record.workspace + "/"

    def source(location):
        if location is None:
            return None
        return {"file": location.file.removeprefix(prefix), "line": location.line,
                "function": location.function, "code": location.code}

    def file_ref(path, text):
        if not text:
            return None
        return {"path": path, "sha256": hashlib.sha256(text.encode()).hexdigest(), "lines": len(text.splitlines())}

    def node(fx):
        return {"name": fx.name, "op": fx.op, "target": fx.target, "source": source(fx.source),
                "source_via": fx.source_via, "graph_line": fx.graph_line, "from_pre_grad": fx.from_pre_grad}

    def origin(line):
        return dataclasses.asdict(line)

    graphs = []
    for graph in record.graphs:
        directory = f"runs/{run_id}/graphs/{graph.key}"
        graphs.append({
            "key": graph.key, "compile_id": graph.compile_id, "frame_id": graph.frame_id,
            "frame_compile_id": graph.frame_compile_id, "attempt": graph.attempt, "kind": graph.kind,
            "pre_grad_file": file_ref(f"{directory}/pre_grad.py", graph.pre_grad_text),
            "post_grad_file": file_ref(f"{directory}/post_grad.py", graph.post_grad_text),
            "wrapper_file": file_ref(f"{directory}/wrapper.py", graph.wrapper_text),
            "pre_grad_nodes": [node(fx) for fx in graph.pre_grad_nodes],
            "post_grad_nodes": [node(fx) for fx in graph.post_grad_nodes],
            "kernels": [{"name": k.name, "kind": k.kind, "file": file_ref(f"{directory}/kernels/{k.name}.py", k.source),
                         "nodes": k.nodes, "lines": [origin(line) for line in k.lines],
                         "inductor_nodes": k.inductor_nodes, "wrapper_lines": k.wrapper_lines}
                        for k in graph.kernels],
            "wrapper_lines": [origin(line) for line in graph.wrapper_lines],
            "wrapper_attributable": graph.wrapper_attributable,
            "inductor_mapping": graph.inductor_mapping,
        })
    return {
        "id": run_id, "target": record.target, "device": record.device, "mode": record.mode,
        "dynamic": record.dynamic, "torch_version": record.torch_version, "triton_version": record.triton_version,
        "provenance": record.provenance, "created": record.created, "graphs": graphs,
        "graph_breaks": [{"reason": b.reason, "source": source(b.source), "compile_id": b.compile_id}
                         for b in record.graph_breaks],
        "recompiles": [dataclasses.asdict(r) for r in record.recompiles],
        "warnings": record.warnings, "timings": record.timings, "peak_memory_mb": record.peak_memory_mb,
        "execute_max_error": record.execute_max_error, "config": record.config,
    }


def test_dump_holds_exactly_what_the_record_held(mlp_store, workspace):
    data = mlp_store.dump(1)
    assert data["schema_version"] == "1.0"
    run = dict(data["run"])
    coverage = run.pop("coverage")
    assert coverage == mlp_store.runs()[0].coverage
    assert canonical(run) == canonical(expected_run(make_mlp_run(workspace), 1))


def test_dump_is_valid_sorted_and_free_of_machine_paths(mlp_store, workspace):
    data = mlp_store.dump()
    validate_dump(data)
    assert schema_problems(data) == []
    text = dump_json(data)
    assert str(workspace) not in text
    assert LIBRARY_FILE in text  # outside the workspace: stays absolute
    assert json.loads(text) == data
    run = data["run"]
    assert [graph["key"] for graph in run["graphs"]] == ["0_0_0-backward", "0_0_0-forward"]
    forward = run["graphs"][1]
    assert [kernel["name"] for kernel in forward["kernels"]] == [
        "extern_kernels.addmm", "extern_kernels.addmm", "triton_poi_fused_gelu_0"]
    assert [kernel["wrapper_lines"] for kernel in forward["kernels"]] == [[8], [13], [11]]
    assert [node["name"] for node in forward["pre_grad_nodes"]] == ["L_x_", "l_x_", "linear", "h_1", "linear_1", "output"]
    gelu = forward["kernels"][2]
    assert gelu["nodes"] == ["add", "erf", "mul", "mul_1", "mul_2"]
    assert gelu["file"]["path"] == "runs/1/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py"
    on_disk = (workspace / ".kernelscope" / gelu["file"]["path"]).read_bytes()
    assert gelu["file"]["sha256"] == hashlib.sha256(on_disk).hexdigest()


def test_dump_does_not_depend_on_record_order_or_machine(tmp_path):
    """The same run recorded in another workspace, with every list in the other order, dumps the same."""
    dumps = []
    for name, reverse in (("first", False), ("second", True)):
        workspace = tmp_path / name
        workspace.mkdir()
        record = make_mlp_run(workspace)
        record.warnings.append("a second warning")
        if reverse:
            record = reversed_lists(record)
        with Store(workspace / ".kernelscope") as store:
            dumps.append(dump_json(store.dump(store.write_run(record))))
    assert dumps[0] == dumps[1]


def reversed_lists(record: RunRecord) -> RunRecord:
    record = copy.deepcopy(record)
    record.graphs.reverse()
    for graph in record.graphs:
        for nodes in (graph.pre_grad_nodes, graph.post_grad_nodes, graph.kernels, graph.wrapper_lines):
            nodes.reverse()
        for node in graph.post_grad_nodes:
            node.from_pre_grad.reverse()
        for kernel in graph.kernels:
            kernel.nodes.reverse()
            kernel.lines.reverse()
            for line in kernel.lines:
                line.nodes.reverse()
    record.warnings.reverse()
    return record


# -- the schema ---------------------------------------------------------------------------


def test_schema_is_draft_2020_12_with_id_and_closed_objects():
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "urn:kernelscope:schema:dump-v1"
    assert schema["properties"]["schema_version"] == {"const": "1.0", "description": schema["properties"]["schema_version"]["description"]}
    open_by_design = {"timings", "config", "inductor_mapping"}  # free-form dicts from torch and the user

    def check(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and path.split(".")[-1] not in open_by_design:
                assert node.get("additionalProperties") is False, path
            for key, child in node.items():
                check(child, f"{path}.{key}")
        elif isinstance(node, list):
            for index, child in enumerate(node):
                check(child, f"{path}[{index}]")

    check(schema, "$")


def test_schema_properties_agree_with_the_record_dataclasses():
    record_classes = {obj.__name__: obj for obj in vars(record_module).values()
                      if dataclasses.is_dataclass(obj) and obj.__module__ == record_module.__name__}
    assert set(record_classes) == set(DUMP_FIELD_CHANGES), "a dataclass in record.py has no place in the dump"
    definitions = load_schema()["$defs"]
    for name, changes in DUMP_FIELD_CHANGES.items():
        fields = {field.name for field in dataclasses.fields(record_classes[name])}
        assert set(changes["renamed"]) <= fields and changes["dropped"] <= fields, name
        expected = (fields - changes["dropped"] - set(changes["renamed"])) | set(changes["renamed"].values()) | changes["added"]
        definition = definitions[changes["$def"]]
        assert set(definition["properties"]) == expected, name
        assert set(definition["required"]) == expected, name


def _broken(data, edit):
    data = copy.deepcopy(data)
    edit(data)
    return data


@pytest.mark.parametrize("edit, path, message", [
    (lambda d: d["run"]["graphs"][0]["kernels"][0].pop("name"), "$.run.graphs[0].kernels[0]", "'name' is a required property"),
    (lambda d: d["run"]["graphs"][1].update(kind="sideways"), "$.run.graphs[1].kind", "'sideways' is not one of"),
    (lambda d: d["run"].update(surprise=1), "$.run", "Additional properties are not allowed ('surprise' was unexpected)"),
    (lambda d: d.update(schema_version="2.0"), "$.schema_version", "'1.0' was expected"),
    (lambda d: d["run"]["graphs"][1]["wrapper_file"].update(sha256="abc"), "$.run.graphs[1].wrapper_file", "is not valid under any of the given schemas"),
    (lambda d: d["run"]["graphs"][1]["wrapper_lines"][0].update(line=0), "$.run.graphs[1].wrapper_lines[0].line", "0 is less than the minimum of 1"),
])
def test_schema_rejects_broken_dumps(mlp_store, edit, path, message):
    broken = _broken(mlp_store.dump(1), edit)
    problems = schema_problems(broken)
    assert [problem.path for problem in problems] == [path]
    assert message in problems[0].message
    with pytest.raises(InvalidDumpError, match="invalid dump at " + path.replace("[", r"\[").replace("$", r"\$")):
        validate_dump(broken)
