"""`kernelscope import`: TORCH_TRACE logs into runs, without torch.

Fast tests build small logs the way torch writes them (glog prefix, JSON
metadata, tab-indented payload with its md5) to exercise damage handling, ranks
and path safety. Slow tests let torch write real logs of the examples (through
`kernelscope compile` with TORCH_TRACE set, so the same process also records the
run directly) and check the import gives the same kernel-level links.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from trace_logs import MAPPING, POST_GRAD, WRAPPER, compile_records, trace_line

from kernelscope.store import StoreBackend
from kernelscope.trace_import import ImportOptions, TraceLogError, find_logs, import_log
from kernelscope.trace_import.importer import rank_from_name

# -- a tiny log (tests/trace_logs.py), written to a file --------------------------------


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines))
    return path


def kernel_links(run) -> dict[str, dict[str, list[str]]]:
    """graph key -> kernel name -> sorted post-grad nodes (the kernel-level links)."""
    return {g.key: {k.name: sorted(k.nodes) for k in g.kernels} for g in run.graphs}


def only_run(path: Path, **options):
    result = import_log(path, ImportOptions(**options))
    assert len(result.runs) == 1, result.skipped
    return result.runs[0]


# -- fast tests ---------------------------------------------------------------------


def test_small_log_becomes_a_kernel_level_run(tmp_path):
    imported = only_run(write_log(tmp_path / "dedicated_log_torch_trace_ab.log", compile_records()))
    run = imported.run
    assert kernel_links(run) == {"0_0_0-inference": {"triton_poi_fused_relu_0": ["relu"]}}
    graph = run.graphs[0]
    assert [(n.name, n.op, n.target) for n in graph.post_grad_nodes] == [
        ("arg0_1", "placeholder", "arg0_1"), ("relu", "call_function", "aten.relu.default"),
        ("output", "output", "output")]
    relu = graph.post_grad_nodes[1]
    assert (relu.source.file, relu.source.line, relu.from_pre_grad, relu.graph_line) == ("/work/model.py", 5, ["y"], 4)
    assert [(n.name, n.target) for n in graph.pre_grad_nodes if n.op == "placeholder"] == [("l_x_", "L_x_")]
    kernel = graph.kernels[0]
    assert kernel.inductor_nodes == ["relu"] and kernel.wrapper_lines == [30] and kernel.lines == []
    assert [(o.line, o.nodes) for o in graph.wrapper_lines] == [(27, ["relu"]), (28, ["relu"]), (30, ["relu"])]
    assert (run.provenance, run.device, run.mode, imported.rank) == ("kernel", "cuda", "inference", None)
    assert imported.stats.records == 6 and imported.stats.kinds["chromium_event"] == 1


def test_damaged_lines_are_counted_and_skipped(tmp_path):
    good = compile_records(frame=0)
    second = compile_records(frame=1)
    # An edited payload line in frame 1's output code: its md5 no longer matches.
    second[4] = second[4].replace("triton_poi_fused_relu_0.run(", "triton_poi_fused_relu_0.run(evil, ")
    lines = good + ["garbage that is not a record\n", "\tstray payload line\n"] + second
    lines.append('V1122 21:48:01.218000 4250 torch/x.py:1] {"artifact": {"name": "inductor_post')  # cut off
    imported = only_run(write_log(tmp_path / "damaged.log", lines))
    assert list(kernel_links(imported.run)) == ["0_0_0-inference"]
    stats = imported.stats
    assert (stats.malformed, stats.bad_payloads) == (3, 1)
    assert [p.what.split(" (")[0] for p in stats.problems][:2] == [
        "not a structured-trace record", "payload line without a record before it"]
    assert any("post-grad graph but no output code" in w for w in imported.run.warnings)
    assert any("4 damaged line(s) skipped" in w for w in imported.run.warnings)


def test_strict_fails_at_the_first_damaged_line(tmp_path):
    lines = compile_records()
    lines.insert(3, "garbage\n")
    path = write_log(tmp_path / "damaged.log", lines)
    with pytest.raises(TraceLogError) as error:
        import_log(path, ImportOptions(strict=True))
    garbage_line = "".join(lines[:3]).count("\n") + 1
    assert str(error.value).startswith(f"{path}:{garbage_line}: not a structured-trace record")
    assert error.value.exit_code == 6


def test_strict_names_a_truncated_payload(tmp_path):
    text = "".join(compile_records())
    cut = text.index("del arg0_1")  # inside the output code's payload
    path = tmp_path / "truncated.log"
    path.write_text(text[:cut])
    with pytest.raises(TraceLogError, match=r"truncated\.log:\d+: payload of inductor_output_code does not match"):
        import_log(path, ImportOptions(strict=True))
    result = import_log(path, ImportOptions())
    assert result.runs == [] and "no complete Inductor compile" in result.skipped[0]


def test_ranks_in_one_file_become_runs_and_early_records_join_the_file_rank(tmp_path):
    # Records logged before init_process_group carry no rank: they belong to rank 3.
    lines = compile_records(frame=0) + compile_records(frame=1, extra={"rank": 3}) \
        + compile_records(frame=2, extra={"rank": 5})
    result = import_log(write_log(tmp_path / "dedicated_log_torch_trace_rank_3_x.log", lines), ImportOptions())
    assert [(r.rank, sorted(kernel_links(r.run))) for r in result.runs] == [
        (3, ["0_0_0-inference", "1_0_0-inference"]), (5, ["2_0_0-inference"])]
    assert [r.run.config["rank"] for r in result.runs] == [3, 5]


def test_unknown_record_kinds_are_counted(tmp_path):
    lines = compile_records() + [trace_line({"brand_new_record": {}, "frame_id": 0}, "x")]
    run = only_run(write_log(tmp_path / "a.log", lines)).run
    assert "unknown record kinds skipped: brand_new_record x1" in run.warnings


def test_backward_extern_calls_without_a_mapping_use_the_graph(tmp_path):
    """Backward graphs have an empty Inductor mapping: an extern call's node is the
    post-grad node of that op which the call's source-node comment names or feeds."""
    post = POST_GRAD.replace(
        'relu: "f32[8][1]cuda:0" = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None',
        'permute: "f32[8][1]cuda:0" = torch.ops.aten.permute.default(arg0_1, [0])\n'
        '        mm_1: "f32[8][1]cuda:0" = torch.ops.aten.mm.default(permute, arg0_1)')
    wrapper = WRAPPER.replace("['0_inference']", "['0_backward']").replace(
        "        del arg0_1\n",
        "        # Topologically Sorted Source Nodes: [permute], Original ATen: [aten.mm]\n"
        "        extern_kernels.mm(arg0_1, arg0_1, out=buf0)\n")
    lines = compile_records(mapping={"version": 2.0}, wrapper=wrapper)
    lines[3] = trace_line({"artifact": {"name": "inductor_post_grad_graph", "encoding": "string"},
                           "frame_id": 0, "frame_compile_id": 0, "attempt": 0}, post)
    run = only_run(write_log(tmp_path / "bw.log", lines)).run
    assert kernel_links(run) == {"0_0_0-backward": {"extern_kernels.mm#0": ["mm_1"],
                                                    "triton_poi_fused_relu_0": ["relu"]}}
    assert [k.inductor_nodes for k in run.graphs[0].kernels] == [None, None]


def test_names_from_a_log_never_leave_the_store(tmp_path):
    """Compile ids, kernel names, handles and file names in a log are data: a crafted
    log cannot make the store write outside its directory."""
    evil_mapping = {**MAPPING, "cppCodeToPost": {"../../../escaped:1": ["relu"], "triton_poi_fused_relu_0:1": ["relu"]}}
    evil_wrapper = WRAPPER.replace("# [Provenance debug handles] triton_poi_fused_relu_0:1",
                                   "# [Provenance debug handles] ../../../escaped:1")
    lines = compile_records(mapping=evil_mapping, wrapper=evil_wrapper)
    lines += compile_records(extra={"frame_id": "../../../escaped"})  # not an integer: rejected
    lines.append(trace_line({"inductor_output_code": {"filename": "../../../escaped.py"}, "frame_id": 0,
                             "frame_compile_id": 0, "attempt": 0}, "# ../../../escaped\n"))
    lines.append(trace_line({"dump_file": {"name": "../../../escaped"}}, "print('never run')"))
    log_dir = tmp_path / "a" / "b" / "c"
    log_dir.mkdir(parents=True)
    path = write_log(log_dir / "dedicated_log_torch_trace_x.log", lines)
    store_root = tmp_path / "a" / "b" / "c" / "store"
    result = import_log(path, ImportOptions())
    assert result.stats.malformed == 6  # every record (but the "str" one) of the compile with a path for a frame id
    with StoreBackend(store_root) as store:
        for imported in result.runs:
            store.write_run(imported.run)
    outside = [p for p in tmp_path.rglob("*") if store_root not in p.parents and p != store_root
               and p.is_file() and p != path]
    assert outside == []
    written = [p.relative_to(store_root).as_posix() for p in store_root.rglob("*") if p.is_file()]
    assert all(".." not in part for name in written for part in name.split("/"))
    assert "runs/1/graphs/0_0_0-inference/kernels/triton_poi_fused_relu_0.py" in written


def test_cli_reports_nothing_to_import(tmp_path, run_cli):
    (tmp_path / "empty.log").write_text("not a trace\n")
    result = run_cli(["import", str(tmp_path / "empty.log"), "--store", str(tmp_path / "s")])
    assert result.returncode == 2
    assert "no structured-trace records found" in result.stderr
    strict = run_cli(["import", str(tmp_path / "empty.log"), "--strict", "--store", str(tmp_path / "s")])
    assert strict.returncode == 6 and f"{tmp_path / 'empty.log'}:1:" in strict.stderr


def test_nothing_from_a_log_is_executed():
    """The importer only parses text and JSON: no eval, exec, pickle or dynamic import."""
    sources = {p.name: p.read_text() for p in (REPO / "kernelscope" / "trace_import").glob("*.py")}
    sources["import_cmd.py"] = (REPO / "kernelscope" / "cli" / "import_cmd.py").read_text()
    forbidden = re.compile(r"(?<![\w.])(eval|exec|compile)\(|pickle|marshal|importlib|__import__")
    assert {name: forbidden.findall(text) for name, text in sources.items() if forbidden.search(text)} == {}


def test_source_paths_from_the_job_map_to_the_local_checkout(tmp_path):
    path = write_log(tmp_path / "a.log", compile_records())
    run = only_run(path, path_map=[("/work", str(tmp_path / "repo"))]).run
    relu = run.graphs[0].post_grad_nodes[1]
    assert relu.source.file == f"{tmp_path}/repo/model.py"


def test_the_importer_never_imports_torch(tmp_path):
    path = write_log(tmp_path / "dedicated_log_torch_trace_x.log", compile_records())
    code = ("import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises ImportError
            "from kernelscope.cli import main\n"
            f"sys.exit(main(['import', {str(path)!r}, '--store', {str(tmp_path / 's')!r}, '--json']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [r["graphs"] for r in summary["runs"]] == [
        [{"compile_id": "0/0", "extern_calls": 0, "kernels": 1, "kind": "inference"}]]


# -- real logs written by torch ---------------------------------------------------------

TWO_RANK_SCRIPT = '''
import os
import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=2)
torch.manual_seed(0)
width = 32 if os.environ["RANK"] == "0" else 48  # ranks compile different shapes
model = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 8))
with torch.no_grad():
    torch.compile(model)(torch.randn(4, width))
dist.barrier()
dist.destroy_process_group()
'''


def _kernelscope(args, env_extra):
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1", **env_extra)
    return subprocess.Popen([sys.executable, "-m", "kernelscope", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="session")
def traced(tmp_path_factory):
    """example name -> (its TORCH_TRACE log, the store the same process recorded into)."""
    root = tmp_path_factory.mktemp("traced")
    cases = {"mlp": ["compile", "examples/mlp.py:make"], "graph_break": ["compile", "examples/graph_break.py:make"],
             "mlp_train": ["compile", "examples/mlp.py:make", "--train"],
             "recompile_shape": ["run", "examples/recompile_shape.py", "--target", "cpu-triton"]}
    found = {}
    for name, args in cases.items():
        process = _kernelscope([*args, "--store", str(root / name / "store"), "--json"],
                               {"TORCH_TRACE": str(root / name / "trace")})
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        (log,) = find_logs(root / name / "trace")
        found[name] = (log, root / name / "store")
    return found


def _recorded(store_path: Path) -> dict:
    with StoreBackend(store_path, create=False) as store:
        return store.dump()["run"]


def _dump_links(run: dict) -> dict[str, dict[str, list[str]]]:
    return {g["key"]: {k["name"]: sorted(k["nodes"]) for k in g["kernels"]} for g in run["graphs"]}


def _imported_dump(log: Path, tmp_path: Path) -> dict:
    result = import_log(log, ImportOptions(workspace=REPO))
    with StoreBackend(tmp_path / "imported") as store:
        run_id = store.write_run(result.runs[0].run)
        return store.dump(run_id)["run"]


@pytest.mark.slow
@pytest.mark.parametrize("example", ["mlp", "graph_break", "mlp_train"])
def test_import_gives_the_kernel_links_of_a_recording(example, traced, tmp_path):
    log, store_path = traced[example]
    recorded, imported = _recorded(store_path), _imported_dump(log, tmp_path)
    assert _dump_links(imported) == _dump_links(recorded)
    assert len(_dump_links(imported)) == {"mlp": 1, "graph_break": 3, "mlp_train": 2}[example]
    for mine, theirs in zip(imported["graphs"], recorded["graphs"]):
        assert (mine["compile_id"], mine["kind"]) == (theirs["compile_id"], theirs["kind"])
        # Launch and extern-call lines of each kernel in the (identical) wrapper.
        assert {k["name"]: k["wrapper_lines"] for k in mine["kernels"]} == \
            {k["name"]: k["wrapper_lines"] for k in theirs["kernels"]}
        # Every post-grad call node is traced to the same source line.
        def sources(graph):
            return {n["name"]: n["source"] and (n["source"]["file"], n["source"]["line"])
                    for n in graph["post_grad_nodes"] if n["op"] == "call_function"}
        assert sources(mine) == sources(theirs)
        if mine["kind"] != "backward":
            assert {n["name"]: n["from_pre_grad"] for n in mine["post_grad_nodes"]} == \
                {n["name"]: n["from_pre_grad"] for n in theirs["post_grad_nodes"]}
    assert [(b["source"]["line"] if b["source"] else None) for b in imported["graph_breaks"]] == \
        [(b["source"]["line"] if b["source"] else None) for b in recorded["graph_breaks"]]
    assert imported["provenance"] == "kernel" and imported["mode"] == recorded["mode"]


@pytest.mark.slow
def test_import_reads_the_guards_and_recompile_failures_a_recording_has(traced, tmp_path):
    log, store_path = traced["recompile_shape"]
    recorded, imported = _recorded(store_path), _imported_dump(log, tmp_path)

    def shape_guards(run):
        return sorted((g["compile_id"], g["expression"], g["added_by"], g["source"] and g["source"]["line"])
                      for g in run["guards"] if g["kind"] in ("shape", "specialization"))

    def failures(run):  # without the failing values: a log has none
        return sorted((r["compile_id"], f["failed_compile_id"], f["guard"], tuple(line["line"] for line in f["lines"]))
                      for r in run["recompiles"] for f in r["failures"])

    assert shape_guards(imported) == shape_guards(recorded)
    assert ("0/1", "x.size()[0] <= 4", "user code", 23) in shape_guards(imported)
    assert failures(imported) == failures(recorded) and len(failures(imported)) == 3
    assert len(imported["guards"]) == len(recorded["guards"])  # Dynamo's guard trees too
    assert all(not f["values"] for r in imported["recompiles"] for f in r["failures"])


@pytest.mark.slow
def test_truncated_and_corrupted_real_logs(traced, tmp_path):
    log, _store = traced["graph_break"]
    text = log.read_bytes()
    # Corrupt the middle graph's output code: that graph is dropped, the others stay.
    start = text.index(b"# AOT ID: ['1_inference']")
    corrupted = tmp_path / "corrupted.log"
    corrupted.write_bytes(text[:start + 20] + b"X" + text[start + 21:])
    imported = only_run(corrupted)
    assert sorted(kernel_links(imported.run)) == ["0_0_1-inference", "2_0_0-inference"]
    assert imported.stats.bad_payloads == 1
    with pytest.raises(TraceLogError, match=r"corrupted\.log:\d+: payload of inductor_output_code"):
        import_log(corrupted, ImportOptions(strict=True))
    # Truncate inside the last graph's output code: the first two graphs survive.
    truncated = tmp_path / "truncated.log"
    truncated.write_bytes(text[:text.index(b"# AOT ID: ['2_inference']") + 200])
    imported = only_run(truncated)
    assert sorted(kernel_links(imported.run)) == ["0_0_1-inference", "1_0_0-inference"]
    assert imported.stats.bad_payloads == 1


@pytest.mark.slow
def test_two_rank_log_from_two_processes(tmp_path):
    script = tmp_path / "two_rank.py"
    script.write_text(TWO_RANK_SCRIPT)
    trace = tmp_path / "trace"
    env = {"TORCH_TRACE": str(trace), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + os.getpid() % 500),
           "WORLD_SIZE": "2"}
    processes = [_kernelscope(["run", str(script), "--store", str(tmp_path / f"store{rank}"), "--json"],
                              {**env, "RANK": str(rank)}) for rank in (0, 1)]
    for process in processes:
        _out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    logs = find_logs(trace)
    assert [rank_from_name(p) for p in logs] == [0, 1]  # dedicated_log_torch_trace_rank_<R>_*.log
    runs = [r for log in logs for r in import_log(log, ImportOptions()).runs]
    assert [(r.rank, r.run.config["rank"]) for r in runs] == [(0, 0), (1, 1)]
    for rank, imported in zip((0, 1), runs):
        with StoreBackend(tmp_path / "imported") as store:
            run_id = store.write_run(imported.run)
            # under a launcher (RANK, WORLD_SIZE) each rank records into STORE/rank-<R>
            assert _dump_links(store.dump(run_id)["run"]) == \
                _dump_links(_recorded(tmp_path / f"store{rank}" / f"rank-{rank}"))
    # The ranks compiled different shapes: their kernels differ, and the import shows it.
    assert 'f32[4, 32]' in runs[0].run.graphs[0].post_grad_text
    assert 'f32[4, 48]' in runs[1].run.graphs[0].post_grad_text
