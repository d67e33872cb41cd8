"""`dump`: deterministic JSON that mirrors the record, and the JSON Schema it is checked against."""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES
from synthetic_runs import LIBRARY_FILE, make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)

from kernelscope import run_record
from kernelscope.decisions.model import decision_to_dict
from kernelscope.run_record import RunRecord
from kernelscope.store import InvalidDumpError, StoreBackend, dump_json, load_schema, schema_problems, validate_dump
from kernelscope.store.export.dump import DUMP_FIELD_CHANGES, SCHEMA_VERSION, DumpOptions, dump_run, portable_text

PORTABLE_LIBRARY_FILE = "<site-packages>/torch/nn/modules/linear.py"


def canonical(value):
    """`value` with every list sorted, to compare content regardless of order."""
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((canonical(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


def expected_run(record: RunRecord) -> dict:
    """What the default dump of `record` must hold, built from the dataclasses independently of the store.
    (The synthetic texts hold no machine paths, so their portable hash is their plain sha256.)"""
    prefix = record.workspace + "/"

    def source(location):
        if location is None:
            return None
        file = location.file.removeprefix(prefix)
        if file == LIBRARY_FILE:
            file = PORTABLE_LIBRARY_FILE
        return {"file": file, "line": location.line, "function": location.function, "code": location.code}

    def file_ref(path, text):
        if not text:
            return None
        return {"path": path, "portable_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "lines": len(text.splitlines())}

    def node(fx):
        stack = fx.stack or ([fx.source] if fx.source is not None else [])
        return {"name": fx.name, "op": fx.op, "target": fx.target, "source": source(fx.source),
                "source_via": fx.source_via, "graph_line": fx.graph_line, "from_pre_grad": fx.from_pre_grad,
                "stack": [source(frame) for frame in stack], "module_path": fx.module_path,
                "module_class": fx.module_class, "lineage": [dataclasses.asdict(step) for step in fx.lineage],
                "recompute": fx.recompute, "recomputed_from": fx.recomputed_from}

    def origin(line):
        return dataclasses.asdict(line)

    graphs = []
    for graph in record.graphs:
        directory = f"graphs/{graph.key}"
        graphs.append({
            "key": graph.key, "compile_id": graph.compile_id, "frame_id": graph.frame_id,
            "frame_compile_id": graph.frame_compile_id, "attempt": graph.attempt, "kind": graph.kind,
            "pre_grad_file": file_ref(f"{directory}/pre_grad.py", graph.pre_grad_text),
            "post_grad_file": file_ref(f"{directory}/post_grad.py", graph.post_grad_text),
            "wrapper_file": file_ref(f"{directory}/wrapper.py", graph.wrapper_text),
            "wrapper_language": graph.wrapper_language,
            "pre_grad_nodes": [node(fx) for fx in graph.pre_grad_nodes],
            "post_grad_nodes": [node(fx) for fx in graph.post_grad_nodes],
            "kernels": [{"name": k.name, "kind": k.kind, "file": file_ref(f"{directory}/kernels/{k.name}.py", k.source),
                         "nodes": k.nodes, "lines": [origin(line) for line in k.lines],
                         "inductor_nodes": k.inductor_nodes, "wrapper_lines": k.wrapper_lines,
                         "launch": k.launch, "asm": None, "user": k.user,
                         "parts": [dataclasses.asdict(part) for part in k.parts],
                         "cpp_loops": None}
                        for k in graph.kernels],
            "wrapper_lines": [origin(line) for line in graph.wrapper_lines],
            "wrapper_attributable": graph.wrapper_attributable,
            "inductor_mapping": graph.inductor_mapping,
            "split": None if graph.split is None else dataclasses.asdict(graph.split),
            "subgraph": None if graph.subgraph is None else {**dataclasses.asdict(graph.subgraph),
                                                             "call_sites": sorted(graph.subgraph.call_sites)},
            "collectives": [{**dataclasses.asdict(c), "frame": source(c.frame), "model_line": source(c.model_line)}
                            for c in graph.collectives],
            "not_fused": [dataclasses.asdict(refusal) for refusal in graph.not_fused],
            "memory": None if graph.memory is None else {
                **dataclasses.asdict(graph.memory), "recomputed": sorted(graph.memory.recomputed),
                "buffers": [{**dataclasses.asdict(b), "read_by": sorted(b.read_by)} for b in graph.memory.buffers]},
        })
    return {
        "target": record.target, "device": record.device, "mode": record.mode,
        "dynamic": record.dynamic, "torch_version": record.torch_version, "triton_version": record.triton_version,
        "provenance": record.provenance, "graphs": graphs,
        "graph_breaks": [{"reason": b.reason, "source": source(b.source), "compile_id": b.compile_id,
                          "explanation": b.explanation, "hints": b.hints, "url": b.url,
                          "stack": [source(frame) for frame in b.stack]}
                         for b in record.graph_breaks],
        "recompiles": [{"compile_id": r.compile_id, "reason": r.reason,
                        "failures": [{**dataclasses.asdict(f), "lines": [source(line) for line in f.lines]}
                                     for f in r.failures]} for r in record.recompiles],
        "guards": [{**dataclasses.asdict(g), "source": source(g.source), "stack": [source(f) for f in g.stack]}
                   for g in record.guards],
        "warnings": record.warnings, "execute_max_error": record.execute_max_error, "config": record.config,
        "rank": None if record.rank is None else {"rank": record.rank.rank, "world_size": record.rank.world_size,
                                                  "backend": record.rank.backend, "local_rank": record.rank.local_rank},
        "gpu": record.gpu,
        "decisions": [decision_to_dict(d) for d in record.decisions],
        "replay": None if record.replay is None else {
            "source": record.replay.source, "recorded_on": record.replay.recorded_on,
            "unused": [decision_to_dict(d) for d in record.replay.unused]},
        # per model line, derived from the graphs' memory (tests/store/test_memory.py checks it)
        "memory": None,
        "eager_memory": None if record.eager_memory is None else {
            **dataclasses.asdict(record.eager_memory),
            "lines": [{**dataclasses.asdict(line), "source": source(line.source)}
                      for line in record.eager_memory.lines]},
        "numerics": None,  # the mlp run is recorded without numerics (tests/engine/test_numerics.py has them)
        "aot_package": None,  # recorded without --aot (tests/engine/test_aot.py)
    }


def test_dump_holds_exactly_what_the_record_held(mlp_store, workspace):
    data = mlp_store.dump(1)
    assert data["schema_version"] == SCHEMA_VERSION
    run = dict(data["run"])
    coverage = run.pop("coverage")
    assert coverage == mlp_store.runs()[0].coverage
    assert canonical(run) == canonical(expected_run(make_mlp_run(workspace)))


def test_volatile_fields_only_when_asked(mlp_store, workspace):
    record = make_mlp_run(workspace)
    data = dump_run(mlp_store.conn, 1, DumpOptions(include_volatile=True))
    validate_dump(data)
    assert data["run"]["volatile"] == {"id": 1, "created": record.created, "timings": record.timings,
                                       "peak_memory_mb": record.peak_memory_mb}
    del data["run"]["volatile"]
    assert data == mlp_store.dump(1)


def test_absolute_paths_only_when_asked(mlp_store, workspace):
    data = dump_run(mlp_store.conn, 1, DumpOptions(absolute_paths=True))
    validate_dump(data)
    files = {node["source"]["file"] for graph in data["run"]["graphs"] for node in graph["post_grad_nodes"]
             if node["source"]}
    assert files == {f"{workspace.as_posix()}/examples/mlp.py", LIBRARY_FILE}
    forward = data["run"]["graphs"][1]
    assert forward["wrapper_file"]["path"] == (
        f"{workspace.as_posix()}/.kernelscope/runs/1/graphs/0_0_0-forward/wrapper.py")
    assert Path(forward["wrapper_file"]["path"]).is_file()


def test_portable_text_removes_workspace_and_inductor_cache_dirs():
    text = ("# kernel path: /tmp/tmpd_6zikm0/tmpvh8opozm/ti/cti66lo3hvmbjfdwghbzfsrxyulalwlsirzes4hyn6p25nappvh5.py\n"
            "        # File: /home/me/proj/examples/mlp.py:20 in forward, code: h = self.fc1(x)\n"
            "        # File: /home/me/project2/x.py:3 in forward\n")
    assert portable_text(text, "/home/me/proj") == (
        "# kernel path: <inductor-cache>/ti/cti66lo3hvmbjfdwghbzfsrxyulalwlsirzes4hyn6p25nappvh5.py\n"
        "        # File: examples/mlp.py:20 in forward, code: h = self.fc1(x)\n"
        "        # File: /home/me/project2/x.py:3 in forward\n")
    assert portable_text(text, "/home/me/proj/") == portable_text(text, "/home/me/proj")


def test_dump_is_valid_sorted_and_free_of_machine_paths(mlp_store, workspace):
    data = mlp_store.dump()
    validate_dump(data)
    assert schema_problems(data) == []
    text = dump_json(data)
    assert str(workspace) not in text
    assert LIBRARY_FILE not in text and PORTABLE_LIBRARY_FILE in text
    assert json.loads(text) == data
    run = data["run"]
    assert [graph["key"] for graph in run["graphs"]] == ["0_0_0-backward", "0_0_0-forward"]
    forward = run["graphs"][1]
    assert [kernel["name"] for kernel in forward["kernels"]] == [
        "extern_kernels.addmm", "extern_kernels.addmm", "triton_poi_fused_gelu_0"]
    assert [kernel["wrapper_lines"] for kernel in forward["kernels"]] == [[8], [13], [11]]
    assert [node["name"] for node in forward["pre_grad_nodes"]] == [
        "L_x_", "l_x_", "linear", "h_1", "linear_1", "output"]
    gelu = forward["kernels"][2]
    assert gelu["nodes"] == ["add", "erf", "mul", "mul_1", "mul_2"]
    assert gelu["file"]["path"] == "graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py"
    on_disk = (workspace / ".kernelscope" / "runs" / "1" / gelu["file"]["path"]).read_bytes()
    assert gelu["file"]["portable_sha256"] == hashlib.sha256(on_disk).hexdigest()


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
        with StoreBackend(workspace / ".kernelscope") as store:
            dumps.append(dump_json(store.dump(store.write_run(record))))
    assert dumps[0] == dumps[1]


def test_two_runs_of_one_store_dump_the_same(mlp_store, workspace):
    """Run ids and creation times differ; the default dumps do not."""
    second = mlp_store.write_run(make_mlp_run(workspace, created=1_800_000_000.0))
    assert second == 2
    assert dump_json(mlp_store.dump(1)) == dump_json(mlp_store.dump(2))


@pytest.mark.slow
def test_two_real_recordings_dump_byte_identically(run_cli, tmp_path):
    """examples/mlp.py (fw + bw) recorded by two `kernelscope compile --dump` processes, in two workspaces
    with their own stores: the dumps are byte-identical, although times, timings, peak memory, the
    workspace and Inductor's temporary cache directory differ."""
    dumps, stores = [], []
    for name in ("one", "two"):
        workspace = tmp_path / name
        (workspace / "examples").mkdir(parents=True)
        shutil.copy(EXAMPLES / "mlp.py", workspace / "examples" / "mlp.py")
        result = run_cli(["compile", "examples/mlp.py:make", "--train", "--dump", "dump.json"], cwd=workspace)
        assert result.returncode == 0, result.stderr
        dumps.append((workspace / "dump.json").read_bytes())
        stores.append(StoreBackend(workspace / ".kernelscope", create=False))
    assert dumps[0] == dumps[1]
    data = json.loads(dumps[0])
    validate_dump(data)
    assert sorted(graph["key"] for graph in data["run"]["graphs"]) == ["0_0_0-backward", "0_0_0-forward"]
    assert str(tmp_path) not in dumps[0].decode() and "/tmp" not in dumps[0].decode()
    with_volatile = [dump_run(store.conn, 1, DumpOptions(include_volatile=True)) for store in stores]
    assert with_volatile[0]["run"]["volatile"]["created"] != with_volatile[1]["run"]["volatile"]["created"]
    forward = [(store.root / "runs/1/graphs/0_0_0-forward/wrapper.py").read_text() for store in stores]
    assert "# kernel path: " in forward[0] and forward[0] != forward[1]  # the cache dirs differ on disk
    for store in stores:
        store.close()


@pytest.mark.slow
def test_two_recordings_in_one_process_dump_byte_identically(recordings, tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    first = recordings.get("mlp", train=True)
    second = record_factory(f"{EXAMPLES / 'mlp'}.py:make",
                            RecordOptions(device="virtual-cuda", train=True, workspace=EXAMPLES.parent))
    texts = []
    for name, record in (("one", first), ("two", second)):
        with StoreBackend(tmp_path / name / ".kernelscope") as store:
            texts.append(dump_json(store.dump(store.write_run(record))))
    assert texts[0] == texts[1]


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
    assert schema["$id"] == f"urn:kernelscope:schema:dump-v{SCHEMA_VERSION.split('.')[0]}"
    assert schema["properties"]["schema_version"] == {
        "const": SCHEMA_VERSION, "description": schema["properties"]["schema_version"]["description"]}
    assert load_schema("1.0")["$id"] == "urn:kernelscope:schema:dump-v1"  # still read: old dumps validate
    assert load_schema("2.0")["$id"] == "urn:kernelscope:schema:dump-v2"
    assert load_schema("3.0")["$id"] == "urn:kernelscope:schema:dump-v3"
    assert load_schema("4.0")["$id"] == "urn:kernelscope:schema:dump-v4"
    assert load_schema("5.0")["$id"] == "urn:kernelscope:schema:dump-v5"
    assert load_schema("6.0")["$id"] == "urn:kernelscope:schema:dump-v6"
    assert load_schema("7.0")["$id"] == "urn:kernelscope:schema:dump-v7"
    # free-form dicts from torch and the user; a config's constants and the instruction classes by name
    open_by_design = {"timings", "config", "inductor_mapping", "kwargs", "mix", "detail", "recorded_on",
                      "user_launch_config", "symbols", "values"}  # why: symbol -> source, source -> value

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
    record_classes = {obj.__name__: obj for obj in vars(run_record).values()
                      if dataclasses.is_dataclass(obj) and obj.__module__ == run_record.__name__}
    assert set(record_classes) == set(DUMP_FIELD_CHANGES), "a dataclass in record.py has no place in the dump"
    definitions = load_schema()["$defs"]
    for name, changes in DUMP_FIELD_CHANGES.items():
        fields = {field.name for field in dataclasses.fields(record_classes[name])}
        assert set(changes["renamed"]) <= fields and changes["dropped"] <= fields, name
        moved = changes.get("moved", {"$def": None, "fields": set(), "added": set()})
        assert moved["fields"] <= fields, name
        expected = ((fields - changes["dropped"] - moved["fields"] - set(changes["renamed"]))
                    | set(changes["renamed"].values()) | changes["added"])
        definition = definitions[changes["$def"]]
        assert set(definition["properties"]) == expected, name
        assert set(definition["required"]) == expected - changes.get("optional", set()), name
        if moved["$def"]:
            moved_definition = definitions[moved["$def"]]
            assert set(moved_definition["properties"]) == moved["fields"] | moved["added"], name
            assert set(moved_definition["required"]) == moved["fields"] | moved["added"], name


def _broken(data, edit):
    data = copy.deepcopy(data)
    edit(data)
    return data


@pytest.mark.parametrize("edit, path, message", [
    (lambda d: d["run"]["graphs"][0]["kernels"][0].pop("name"), "$.run.graphs[0].kernels[0]",
     "'name' is a required property"),
    (lambda d: d["run"]["graphs"][1].update(kind="sideways"), "$.run.graphs[1].kind", "'sideways' is not one of"),
    (lambda d: d["run"].update(surprise=1), "$.run",
     "Additional properties are not allowed ('surprise' was unexpected)"),
    (lambda d: d.update(schema_version="99.0"), "$.schema_version", f"'{SCHEMA_VERSION}' was expected"),
    (lambda d: d["run"]["graphs"][1].update(subgraph={"name": "true_graph_0"}), "$.run.graphs[1].subgraph",
     "is not valid under any of the given schemas"),
    (lambda d: d["run"].update(created=1.0), "$.run",
     "Additional properties are not allowed ('created' was unexpected)"),
    (lambda d: d["run"]["graphs"][1]["wrapper_file"].update(portable_sha256="abc"), "$.run.graphs[1].wrapper_file",
     "is not valid under any of the given schemas"),
    (lambda d: d["run"]["graphs"][1]["wrapper_lines"][0].update(line=0), "$.run.graphs[1].wrapper_lines[0].line",
     "0 is less than the minimum of 1"),
])
def test_schema_rejects_broken_dumps(mlp_store, edit, path, message):
    broken = _broken(mlp_store.dump(1), edit)
    problems = schema_problems(broken)
    assert [problem.path for problem in problems] == [path]
    assert message in problems[0].message
    with pytest.raises(InvalidDumpError, match="invalid dump at " + path.replace("[", r"\[").replace("$", r"\$")):
        validate_dump(broken)
