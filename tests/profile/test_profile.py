"""GPU profiling: device time from real torch.profiler traces joined to runs.

The data (tests/data/profiles/) is real: each example was run as a "cluster job"
on an H100 (record_job.py: a plain torch.compile under torch.profiler, with
TORCH_TRACE set for the same process). A test imports the job's TORCH_TRACE log
(the run of that very compile) and attaches its chrome trace. Expected times are
computed here straight from the trace's JSON, independently of kernelscope's
trace reader: kernel events by name, launches by correlation id, CPU ops by
their time ranges on the launching thread.
"""
from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from kernelscope.profile import ProfileMismatch, TraceError
from kernelscope.profile.attach import attach_trace
from kernelscope.profile.report import time_label
from kernelscope.store import StoreBackend
from kernelscope.store.parts.profiles import file_line_times, line_times
from kernelscope.trace_import import ImportOptions, import_log

DATA = REPO / "tests" / "data" / "profiles"
JOB_CHECKOUT = "/work/main"  # where the GPU job ran (its TORCH_TRACE log names files there)
STEPS = 3  # record_job.py --steps 3
GRAPH_CALL = "## Call CompiledFxGraph"


def example_line(example: str, needle: str) -> int:
    for number, line in enumerate((REPO / "examples" / f"{example}.py").read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in examples/{example}.py")


class Imported:
    """Each job's TORCH_TRACE log imported once into its own store."""

    def __init__(self, root: Path):
        self.root = root
        self.runs: dict[str, int] = {}

    def store(self, job: str) -> tuple[StoreBackend, int]:
        store_dir = self.root / job / "store"
        if job not in self.runs:
            log = self.root / job / "dedicated_log_torch_trace_job.log"
            log.parent.mkdir(parents=True)
            log.write_bytes(gzip.decompress((DATA / f"{job}.torch_trace.log.gz").read_bytes()))
            result = import_log(log, ImportOptions(workspace=REPO, path_map=[(JOB_CHECKOUT, str(REPO))]))
            with StoreBackend(store_dir) as store:
                self.runs[job] = store.write_run(result.runs[0].run)
        return StoreBackend(store_dir, create=False), self.runs[job]


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Imported:
    return Imported(tmp_path_factory.mktemp("profile_jobs"))


@pytest.fixture
def attached(imported):
    """(store, run id, profile) of a job with its own trace attached."""
    opened = []

    def attach(job: str):
        store, run_id = imported.store(job)
        opened.append(store)
        profile, _ = attach_trace(store, DATA / f"{job}.trace.json.gz", run_id)
        return store, run_id, profile

    yield attach
    for store in opened:
        store.close()


# -- reading the raw trace, independently of kernelscope.profile.trace ----------------


def raw_events(job: str) -> list[dict]:
    return json.loads(gzip.decompress((DATA / f"{job}.trace.json.gz").read_bytes()))["traceEvents"]


def raw_kernels(events):
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def raw_launch(events, kernel):
    return next(e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e["args"].get("correlation") == kernel["args"]["correlation"])


def inside(outer, inner) -> bool:
    return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"]
            and inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + 0.01)


def graph_calls(events):
    return [e for e in events if e.get("cat") == "cpu_op" and e["name"].startswith(GRAPH_CALL)]


# -- the join -------------------------------------------------------------------------


def test_triton_kernels_join_by_name(attached):
    store, run_id, profile = attached("mlp_train")
    events = raw_events("mlp_train")
    triton = {row[0]: row[1] for row in store.conn.execute(
        "SELECT name, id FROM kernels WHERE run_id = ? AND kind = 'triton'", (run_id,))}
    assert len(triton) == 7  # 2 forward + 5 backward
    for name, kernel_id in triton.items():
        expected = sum(e["dur"] for e in raw_kernels(events) if e["name"] == name) / STEPS
        assert expected > 0, name
        assert profile.kernels[kernel_id].device_time_us == pytest.approx(expected, abs=1e-6), name
        assert profile.kernels[kernel_id].calls == 1.0
    assert profile.graph_calls == {"[0/0] forward": STEPS, "[0/0] backward": STEPS}
    assert profile.on_lines_us == pytest.approx(profile.attributed_us)  # every kernel reaches a model line
    assert profile.steps == STEPS and profile.device_name == "NVIDIA H100 80GB HBM3"


def _ops_under_calls(events, op_name):
    """Per graph call, the ops named op_name directly in it, in order."""
    calls = graph_calls(events)
    ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == op_name]
    return [sorted((op for op in ops if inside(call, op)), key=lambda e: e["ts"]) for call in calls]


def _time_launched_in(events, ops) -> tuple[float, int]:
    """Device time (and kernel count) of kernels whose launch lies inside one of `ops`."""
    total, count = 0.0, 0
    for kernel in raw_kernels(events):
        launch = raw_launch(events, kernel)
        if any(inside(op, launch) for op in ops):
            total += kernel["dur"]
            count += 1
    return total, count


def test_extern_calls_join_through_the_launch_to_the_wrapper_line(attached):
    """cuBLAS kernels (named nothing like `extern_kernels.mm`) land on the call that
    issued them, and so on the model line of that call: the second `aten::mm` of each
    call of the graph is `extern_kernels.mm#1`, the output projection."""
    store, run_id, profile = attached("attention_inference")
    events = raw_events("attention_inference")
    by_name = {k.name: k for k in profile.kernels.values()}
    per_call = _ops_under_calls(events, "aten::mm")
    assert [len(ops) for ops in per_call] == [2] * STEPS
    for ordinal in (0, 1):
        expected, count = _time_launched_in(events, [ops[ordinal] for ops in per_call])
        kernel = by_name[f"extern_kernels.mm#{ordinal}"]
        assert kernel.device_time_us == pytest.approx(expected / STEPS, abs=1e-6)
        assert kernel.calls == count / STEPS
    # The projection's mm ran as two kernels (a split-K GEMM and its reduction), both on it.
    assert by_name["extern_kernels.mm#1"].calls == 2.0
    assert by_name["extern_kernels.mm#0"].lines == [("examples/attention.py", example_line("attention", "self.qkv(x)"))]
    assert by_name["extern_kernels.mm#1"].lines == [
        ("examples/attention.py", example_line("attention", "self.proj(out)"))]
    cublas = [e for e in raw_kernels(events) if not e["name"].startswith("triton_")
              and any(inside(call, raw_launch(events, e)) for call in graph_calls(events))]
    assert cublas and not any(e["name"].startswith(("extern_kernels", "aten")) for e in cublas)  # cuBLAS names
    assert sum(k.device_time_us for k in profile.kernels.values() if k.kind == "extern") == \
        pytest.approx(sum(e["dur"] for e in cublas) / STEPS, abs=1e-6)


def test_cudnn_convolution_nested_ops_land_on_the_extern_call(attached):
    """`extern_kernels.convolution` -> aten::convolution -> aten::_convolution ->
    aten::cudnn_convolution -> the cuDNN kernel: the time goes to the wrapper's call."""
    _store, _run_id, profile = attached("conv_bn_inference")
    events = raw_events("conv_bn_inference")
    per_call = _ops_under_calls(events, "aten::convolution")
    expected, _ = _time_launched_in(events, [ops[0] for ops in per_call])
    conv = next(k for k in profile.kernels.values() if k.name == "extern_kernels.convolution#0")
    assert expected > 0
    assert conv.device_time_us == pytest.approx(expected / STEPS, abs=1e-6)
    assert conv.lines == [("examples/conv_bn.py", example_line("conv_bn", "self.conv(x)"))]


def test_fused_kernel_time_is_on_each_line_marked_shared_and_counted_once(attached):
    store, run_id, profile = attached("mlp_inference")
    gelu, norm = example_line("mlp", "F.gelu(h)"), example_line("mlp", "self.norm(h)")
    fused = next(k for k in profile.kernels.values() if "gelu" in k.name)
    assert ("examples/mlp.py", gelu) in fused.lines and ("examples/mlp.py", norm) in fused.lines
    assert fused.shared
    lines = line_times(profile)
    for line in (gelu, norm):
        total, shared = lines[("examples/mlp.py", line)]
        assert shared and total >= fused.device_time_us
    # Totals count each kernel once; per-line times repeat a shared kernel on each of its lines.
    once = sum(k.device_time_us for k in profile.kernels.values())
    assert profile.attributed_us == pytest.approx(once, abs=1e-6)
    assert sum(total for total, _ in lines.values()) > once
    # The same answer through the store's query API (what `query --json` prints).
    answer = store.query("examples/mlp.py", gelu, run_id)
    kernel_ref = next(k for chain in answer.graphs for k in chain.kernels if k.name == fused.name)
    assert kernel_ref.shared and kernel_ref.device_time_us == pytest.approx(fused.device_time_us, abs=1e-3)
    source = next(s for chain in answer.graphs for s in chain.sources if s.line == gelu)
    assert source.shared and source.device_time_us == pytest.approx(lines[("examples/mlp.py", gelu)][0], abs=1e-3)
    assert answer.profile["steps"] == STEPS
    links = store.lines_for_file("examples/mlp.py", run_id)
    gelu_link = next(link for link in links.lines if link.line == gelu)
    assert gelu_link.device_time_us == pytest.approx(source.device_time_us)
    by_line, step = file_line_times(store.conn, run_id, "examples/mlp.py")  # what an editor's lens reads
    assert by_line[gelu][0] == pytest.approx(source.device_time_us, abs=1e-3) and by_line[gelu][1]
    assert time_label(by_line[gelu][0], by_line[gelu][0] / step).endswith("% of step")


def test_time_outside_the_compiled_graphs_is_reported_not_dropped(attached):
    _store, _run_id, profile = attached("mlp_train")
    events = raw_events("mlp_train")
    calls = graph_calls(events)
    outside = [k for k in raw_kernels(events) if not any(inside(c, raw_launch(events, k)) for c in calls)]
    assert outside
    assert profile.outside_graphs_us == pytest.approx(sum(k["dur"] for k in outside) / STEPS, abs=1e-6)
    optimizer = [k for k in outside if "multi_tensor_apply_kernel" in k["name"]]
    assert optimizer
    by_op = profile.outside
    assert by_op["aten::_foreach_add_ (in Optimizer.step#SGD.step)"] == \
        pytest.approx(sum(k["dur"] for k in optimizer) / STEPS, abs=1e-6)
    assert "aten::sum" in by_op  # the eager loss
    # Nothing is lost or spread: kernels + in-graph rest + outside == all device time.
    assert profile.attributed_us + profile.in_graphs_other_us + profile.outside_graphs_us == \
        pytest.approx(profile.device_time_us, abs=1e-6)
    assert profile.device_time_us == pytest.approx(sum(k["dur"] for k in raw_kernels(events)) / STEPS, abs=1e-6)


@pytest.mark.parametrize("job", ["conv_bn_train", "attention_train"])
def test_every_kernel_of_a_training_run_gets_time(attached, job):
    store, run_id, profile = attached(job)
    kernel_count = store.conn.execute("SELECT COUNT(*) FROM kernels WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert len(profile.kernels) == kernel_count
    assert all(k.device_time_us > 0 for k in profile.kernels.values())
    assert profile.in_graphs_other_us == 0.0 and profile.warnings == []


def test_a_trace_of_another_compile_is_refused_naming_what_did_not_match(imported):
    store, run_id = imported.store("attention_inference")
    with store:
        before = store.device_times(run_id)  # None, or the run's own trace from another test
        with pytest.raises(ProfileMismatch) as refused:
            attach_trace(store, DATA / "mlp_train.trace.json.gz", run_id)
        after = store.device_times(run_id)
    message = str(refused.value)
    assert "mlp_train.trace.json.gz is not a trace of run" in message
    assert "triton_per_fused_gelu_native_layer_norm_0" in message  # an MLP kernel
    assert "--run ID" in message
    assert (before and before.summary()) == (after and after.summary())  # nothing written


def test_unreadable_and_graphless_traces_are_refused(imported, tmp_path):
    store, run_id = imported.store("mlp_inference")
    garbage = tmp_path / "trace.json"
    garbage.write_text("{not json")
    eager_only = tmp_path / "eager.json"
    eager_only.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 7, "ts": 5,
         "dur": 3, "args": {"correlation": 7}},
    ]}))
    with store:
        with pytest.raises(TraceError, match="trace.json: not a chrome trace"):
            attach_trace(store, garbage, run_id)
        with pytest.raises(ProfileMismatch, match="no call of a compiled graph"):
            attach_trace(store, eager_only, run_id)


def test_query_lookups_with_a_profile_use_indexes(attached):
    """With a profile attached, query and lines_for_file still answer from indexes only."""
    store, run_id, _ = attached("mlp_train")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    store.query("examples/mlp.py", example_line("mlp", "F.gelu(h)"), run_id)
    store.lines_for_file("examples/mlp.py", run_id)
    store.conn.set_trace_callback(None)
    profile_statements = [s for s in statements if "device_times" in s or "profiles" in s]
    assert profile_statements
    for statement in statements:
        for row in store.conn.execute("EXPLAIN QUERY PLAN " + statement):
            detail = row[3]
            assert not (detail.startswith("SCAN") and detail.split()[1] != "runs"), (detail, statement)
            assert "_by_run " not in detail, (detail, statement)


# -- the command line ------------------------------------------------------------------


def _cli(args, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_profile_command_attaches_and_query_json_shows_device_time(imported):
    store, run_id = imported.store("mlp_train")
    store.close()
    trace = str(DATA / "mlp_train.trace.json.gz")
    text = _cli(["profile", trace, "--store", str(store.root), "--run", str(run_id)])
    assert text.returncode == 0, text.stderr
    assert "outside the compiled graphs" in text.stdout and "Optimizer.step#SGD.step" in text.stdout
    again = _cli(["profile", trace, "--store", str(store.root), "--run", str(run_id), "--json"])
    data = json.loads(again.stdout)
    assert data["run"] == run_id and data["steps"] == STEPS and data["graph_calls"]["[0/0] backward"] == STEPS
    assert data["top_kernels"][0]["device_time_us"] >= data["top_kernels"][-1]["device_time_us"]
    with sqlite3.connect(store.root / "kernelscope.sqlite") as conn:  # attaching again replaced it
        assert conn.execute("SELECT COUNT(*) FROM profiles WHERE run_id = ?", (run_id,)).fetchone()[0] == 1
    gelu = example_line("mlp", "F.gelu(h)")
    answer = json.loads(_cli(["query", f"examples/mlp.py:{gelu}", "--store", str(store.root), "--json"]).stdout)
    kernels = [k for chain in answer["graphs"] for k in chain["kernels"]]
    assert kernels and all(k["device_time_us"] > 0 for k in kernels)
    sources = [s for chain in answer["graphs"] for s in chain["sources"]]
    assert any(s["line"] == gelu and s["device_time_us"] > 0 and s["shared"] for s in sources)
    refused = _cli(["profile", str(DATA / "conv_bn_train.trace.json.gz"), "--store", str(store.root),
                    "--run", str(run_id)])
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "not kernels of the run" in refused.stderr


@pytest.mark.slow
def test_compile_profile_without_a_gpu_fails_in_one_line_and_records_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --profile runs there (see docs/profiling.md)")
    store = tmp_path / "store"
    result = _cli(["compile", "examples/mlp.py:make", "--profile", "--store", str(store)])
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "--profile runs the compiled model on a GPU, and no CUDA GPU is available here" in result.stderr
    assert not store.exists()


def test_profiled_dumps_validate_and_diff_gates_on_device_time(imported, tmp_path):
    """Dumps carry the profile; `diff --fail-on device-time` compares two profiles of one
    compile: the job's (optimizer step, zero_grad) against compile --profile's runner on
    the same model and GPU (no optimizer: gradients accumulate eagerly, more time outside
    the graphs)."""
    from kernelscope.diff import compare_runs, evaluate_gates
    from kernelscope.diff.model import diff_side
    from kernelscope.store.export.dump import schema_problems

    store, run_id = imported.store("mlp_train")
    with store:
        attach_trace(store, DATA / "mlp_train.trace.json.gz", run_id)
        job = store.dump(run_id)
        attach_trace(store, DATA / "mlp_train.compile_profile.trace.json.gz", run_id)
        runner = store.dump(run_id)
    assert schema_problems(job) == [] and schema_problems(runner) == []
    assert job["run"] == runner["run"] and job["profile"] != runner["profile"]
    assert len(job["profile"]["kernels"]) == 12
    outside = {item["op"] for item in runner["profile"]["outside_graphs"]}
    assert any("AccumulateGrad" in op for op in outside)
    diff = compare_runs(diff_side(job, "job"), diff_side(runner, "runner"))
    assert diff.is_empty  # the same compile
    ratio = diff.device_time.ratio()
    assert ratio == pytest.approx(runner["profile"]["device_time_us"] / job["profile"]["device_time_us"])
    assert ratio > 1.10
    [result] = evaluate_gates(diff, ["device-time"])
    assert result.tripped and "over the 10% tolerance" in result.reasons[0]
    diff.device_time.tolerance = ratio  # a looser gate passes
    assert not evaluate_gates(diff, ["device-time"])[0].tripped
    unprofiled = {**job}
    unprofiled.pop("profile")
    one_sided = compare_runs(diff_side(unprofiled, "A"), diff_side(runner, "B"))
    assert "A has no profile" in evaluate_gates(one_sided, ["device-time"])[0].reasons[0]


def test_the_profile_runner_uses_what_the_recorder_provides():
    """compile --profile records through the recorder's own pieces (so the profiled
    steps run the very compiled model that was recorded); a rename there breaks it."""
    import importlib

    from kernelscope.engine import profiling

    for module, name in (("recording", "import_torch"), ("devices.device_target", "resolve_device"),
                         ("recording", "Recording"), ("run_assembly", "build_run"), ("user_model", "scalar_loss"),
                         ("user_model", "prepare_inputs"), ("error_translation", "raise_translated"),
                         ("targets", "display_path"), ("run_assembly", "finish")):
        assert callable(getattr(importlib.import_module(f"kernelscope.engine.{module}"), name, None)), name
    assert profiling.WARMUP_STEPS >= 1


def test_attaching_a_trace_never_imports_torch(imported):
    """`kernelscope profile` and the store's device-time lookups run where torch is not
    installed (a laptop reading a cluster job's trace)."""
    store, run_id = imported.store("conv_bn_train")
    store.close()
    code = (
        "import sys\n"
        "from kernelscope.cli import main\n"
        f"rc = main(['profile', {str(DATA / 'conv_bn_train.trace.json.gz')!r}, '--store', {str(store.root)!r}, "
        f"'--run', '{run_id}', '--json'])\n"
        f"main(['query', 'examples/conv_bn.py:{example_line('conv_bn', 'self.conv(x)')}', '--store', "
        f"{str(store.root)!r}, '--json'])\n"
        "assert rc == 0\n"
        "print('TORCH', 'torch' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr
    assert "TORCH False" in result.stderr
    assert '"device_time_us"' in result.stdout


def test_a_kernel_with_no_device_work_in_the_trace_is_named(imported, tmp_path):
    """The real mlp inference trace with one Triton kernel's GPU events removed: the
    kernel gets no time, and the profile says which kernel ran nothing."""
    store, run_id = imported.store("mlp_inference")
    events = raw_events("mlp_inference")
    dropped = next(e["name"] for e in raw_kernels(events) if e["name"].startswith("triton_"))
    trimmed = tmp_path / "trimmed.json"
    trimmed.write_text(json.dumps({"traceEvents": [e for e in events if e.get("name") != dropped
                                                   or e.get("cat") != "kernel"]}))
    with store:
        profile, _ = attach_trace(store, trimmed, run_id)
    assert dropped not in {k.name for k in profile.kernels.values()}
    assert any(dropped in warning and "ran no device work" in warning for warning in profile.warnings)
