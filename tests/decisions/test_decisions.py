"""Timing decisions without a compile: the decisions file, where `--decisions` finds one,
the store, dumps, `show`, `diff` and `kernelscope decisions`, and the engine's hooks on
Inductor's own functions (record on a GPU, replay under virtual-cuda) driven directly.
Real compiles that replay decisions are in test_decisions_replay.py."""
from __future__ import annotations

import copy
import json
import math
import types
from pathlib import Path

import pytest
from synthetic_runs import make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)

from kernelscope.decisions import DecisionsError, load_file, resolve
from kernelscope.decisions.keys import module_key, triton_config_key
from kernelscope.decisions.model import DecisionSet, decision_to_dict, from_run, write_file
from kernelscope.diff.compare import compare_runs
from kernelscope.diff.model import diff_side
from kernelscope.diff.report import render
from kernelscope.run_record import Decision, DecisionReplay
from kernelscope.store import validate_dump

H100 = {"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "sm_count": 132}
PAD_KEY = "((torch.Size([4, 16]), (16, 1), torch.float32), 'mm')"


def pad(choice: str = "pad", origin: str = "timed", rule: str = "timed on the GPU") -> Decision:
    return Decision("pad_mm", PAD_KEY, choice, origin, rule, summary="aten.mm [4, 16] @ [16, 10] torch.float32",
                    where="0/0", timings={"padded": 0.004, "unpadded": 0.006})


def gpu_run(workspace: Path):
    """The synthetic MLP run as a GPU made it: a pad_mm decision, an autotune decision with
    a failed choice, and the launch config of its forward GELU kernel."""
    run = make_mlp_run(workspace)
    run.device, run.gpu = "cuda", H100
    gelu = next(k for k in run.graphs[0].kernels if k.kind == "triton")
    config = {"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}
    candidates = [{"kwargs": {"XBLOCK": 128}, "num_warps": 4, "num_stages": 1}, config]
    gelu.launch = {"config": config, "candidates": candidates, "registers": 24, "spills": 0, "shared_bytes": 0,
                   "replayed_from": None}
    run.decisions = [
        pad(),
        Decision("autotune", "mm|[('cuda', 'torch.float32', 8, 32, 32, 1, 0)]|highest", "triton_mm BLOCK_M=16", "timed",
                 "timed on the GPU: the fastest choice", summary="mm(8x32) torch.float32", where="0/0",
                 timings={"mm": 0.01, "triton_mm BLOCK_M=16": 0.005, "triton_mm BLOCK_M=64": math.inf},
                 detail={"choices": ["mm", "triton_mm BLOCK_M=16", "triton_mm BLOCK_M=64"]}),
        Decision("triton_config", triton_config_key(gelu.name, gelu.source), "XBLOCK=256 num_warps=4 num_stages=1",
                 "timed", "timed on the GPU: the fastest of 2 configs", summary=f"launch config of {gelu.name}",
                 where=run.graphs[0].key, kernel=gelu.name, timings={"XBLOCK=256 num_warps=4 num_stages=1": 0.002},
                 detail={"config": config, "candidates": candidates, "registers": 24, "spills": 0,
                         "shared_bytes": 0}),
    ]
    return run


def replaying_run(workspace: Path):
    """The synthetic MLP run as virtual-cuda made it replaying `gpu_run`'s decisions: one pad_mm
    replayed, one guessed, the launch config replayed, one recorded decision never asked for."""
    run = make_mlp_run(workspace, created=1_763_800_050.0)
    run.gpu = {"name": "NVIDIA H100 (virtual)", "capability": [9, 0], "sm_count": 132}
    gelu = next(k for k in run.graphs[0].kernels if k.kind == "triton")
    recorded = gpu_run(workspace)
    launch = recorded.decisions[2]
    gelu.launch = {**{k: launch.detail[k] for k in ("config", "candidates", "registers", "spills", "shared_bytes")},
                   "replayed_from": "run 1 of .kernelscope"}
    run.decisions = [
        pad(origin="replayed", rule="replayed from run 1 of .kernelscope"),
        Decision("pad_mm", "another key", "no pad", "guessed",
                 "no pad, as pad_mm answers when it must not time (config.deterministic): no learned heuristic",
                 summary="aten.mm [4, 10] @ [10, 16] torch.float32", where="0/0"),
        Decision("triton_config", launch.key, launch.choice, "replayed", "replayed from run 1 of .kernelscope",
                 summary=launch.summary, where=run.graphs[0].key, kernel=gelu.name, timings=dict(launch.timings),
                 detail={**launch.detail, "replayed_from": "run 1 of .kernelscope"}),
    ]
    run.replay = DecisionReplay("run 1 of .kernelscope", {"gpu": H100, "torch": "2.11.0", "triton": "3.6.0",
                                                           "target": "examples/mlp.py:make", "device": "cuda"},
                                [recorded.decisions[1]])
    return run


# -- the decisions file and where --decisions finds one ------------------------------------


def test_a_decisions_file_round_trips_and_a_failed_time_is_null(tmp_path, workspace):
    written = from_run(gpu_run(workspace), "run 1")
    path = tmp_path / "decisions.json"
    write_file(written, path)
    data = json.loads(path.read_text())
    assert data["kernelscope_decisions"] == "1.0" and data["recorded_on"]["gpu"] == H100
    assert data["decisions"][1]["timings"]["triton_mm BLOCK_M=64"] is None  # JSON has no infinity
    read = load_file(path)
    assert read.source == str(path) and read.explicit
    assert [decision_to_dict(d) for d in read.decisions] == [decision_to_dict(d) for d in written.decisions]
    assert read.find("autotune", written.decisions[1].key).timings["triton_mm BLOCK_M=64"] == math.inf
    assert read.find("pad_mm", "no such key") is None


def test_guessed_decisions_are_not_exported(workspace):
    """A virtual-cuda guess is not the GPU's decision: never replayed from an export."""
    exported = from_run(replaying_run(workspace), "run 2")
    assert {d.origin for d in exported.decisions} == {"replayed"} and len(exported.decisions) == 2


@pytest.mark.parametrize("content, message", [
    ("{not json", "decisions.json:1: not JSON"),
    (json.dumps({"kernelscope_decisions": "9.0", "decisions": []}), "decisions file format '9.0'"),
    (json.dumps({"kernelscope_decisions": "1.0", "decisions": [{"kind": "pad_mm"}]}),
     "decisions.json: decision 1: a decision needs the text fields key, choice, origin, rule"),
    (json.dumps({"kernelscope_decisions": "1.0", "decisions": [
        {"kind": "padding", "key": "k", "choice": "pad", "origin": "timed", "rule": "r"}]}),
     "decision 1: unknown decision kind 'padding'"),
    (json.dumps({"schema_version": "4.0", "run": {"graphs": []}}), "a dump of schema 4.0 holds no decisions"),
    (json.dumps({"hello": 1}), "neither a decisions file nor a kernelscope dump"),
])
def test_a_bad_decisions_file_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "decisions.json"
    path.write_text(content)
    with pytest.raises(DecisionsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_file(path)


def test_where_decisions_come_from(mlp_store, workspace, tmp_path):
    """A run id of the store, a file, `none`; without --decisions the pyproject setting, else the
    store's decisions.json, else none."""
    mlp_store.write_run(gpu_run(workspace))  # run 2
    store_dir = workspace / ".kernelscope"
    assert resolve(None, store_dir, workspace) is None
    from_store = resolve("2", store_dir, workspace)
    assert from_store.source == f"run 2 of {store_dir}" and from_store.gpu == H100 and len(from_store.decisions) == 3
    assert resolve("latest", store_dir, workspace).source == from_store.source
    assert resolve("latest~1", store_dir, workspace).decisions == []  # run 1 made none
    assert resolve("none", store_dir, workspace) is None
    with pytest.raises(DecisionsError, match="--decisions gpu.json: no such file, and not a run of the store"):
        resolve("gpu.json", store_dir, workspace)
    write_file(from_store, store_dir / "decisions.json")
    default = resolve(None, store_dir, workspace)
    assert default.source == str(store_dir / "decisions.json") and not default.explicit
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ndecisions = "none"\n')
    assert resolve(None, store_dir, workspace) is None
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ndecisions = "2"\n')
    assert resolve(None, store_dir, workspace).source == from_store.source
    (workspace / "pyproject.toml").write_text("[tool.kernelscope]\ndecisions = 3\n")
    with pytest.raises(DecisionsError, match="decisions must be a string"):
        resolve(None, store_dir, workspace)


def test_keys_from_generated_code():
    source = ("import triton\n\n"
              "@triton_heuristics.pointwise(size_hints={'x': 1024}, triton_meta={'backend_hash': 'AB12'})\n"
              "@triton.jit\ndef triton_poi_fused_add_0(in_ptr0, xnumel, XBLOCK: tl.constexpr):\n    x0 = xindex\n")
    key = triton_config_key("triton_poi_fused_add_0", source)
    assert key.startswith("triton_poi_fused_add_0:")
    assert triton_config_key("triton_poi_fused_add_0", source.replace("'x': 1024", "'x': 2048")) == key  # decorator
    assert triton_config_key("triton_poi_fused_add_0", source.replace("x0 = xindex", "x0 = xindex + 1")) != key
    assert triton_config_key("triton_other_0", source) is None
    module = "triton_meta={'backend_hash': 'AB12'}\n# /tmp/torchinductor_root/ab/cab.py\ndef call(args): pass\n"
    assert module_key(module) == module_key(module.replace("AB12", "CD34").replace("torchinductor_root", "x"))
    assert module_key(module) != module_key(module.replace("pass", "return"))


# -- the store, dumps, show, diff ---------------------------------------------------------


def test_decisions_through_the_store_dump_and_show(mlp_store, workspace):
    gpu_id = mlp_store.write_run(gpu_run(workspace))
    replay_id = mlp_store.write_run(replaying_run(workspace))
    stored = mlp_store.run(replay_id).decisions()
    assert [d.origin for d in stored.decisions] == ["replayed", "guessed", "replayed"]
    assert stored.replay.source == "run 1 of .kernelscope" and len(stored.replay.unused) == 1
    assert stored.guessed[0].summary == "aten.mm [4, 10] @ [10, 16] torch.float32"
    assert mlp_store.run(gpu_id).decisions().decisions[1].timings["triton_mm BLOCK_M=64"] == math.inf
    assert mlp_store.run(1).decisions().decisions == [] and mlp_store.run(1).decisions().gpu is None

    data = mlp_store.run(replay_id).dump()
    validate_dump(data)
    run = data["run"]
    assert run["gpu"]["name"] == "NVIDIA H100 (virtual)"
    assert [d["kind"] for d in run["decisions"]] == ["pad_mm", "pad_mm", "triton_config"]  # sorted
    assert run["replay"]["unused"][0]["timings"]["triton_mm BLOCK_M=64"] is None
    gelu = next(k for k in run["graphs"][1]["kernels"] if k["name"] == "triton_poi_fused_gelu_0")
    assert gelu["launch"]["replayed_from"] == "run 1 of .kernelscope"
    gpu_gelu = next(k for k in mlp_store.run(gpu_id).dump()["run"]["graphs"][1]["kernels"]
                    if k["name"] == "triton_poi_fused_gelu_0")
    assert gpu_gelu["launch"]["replayed_from"] is None

    # below the kernel builds the replayed config, and says where it came from
    pending = {kernel.name: kernel for kernel in mlp_store.asm.pending(replay_id)}
    assert pending["triton_poi_fused_gelu_0"].launch["replayed_from"] == "run 1 of .kernelscope"
    assert pending["triton_poi_fused_gelu_0"].launch["config"]["kwargs"] == {"XBLOCK": 256}

    import kernelscope

    with kernelscope.open(workspace / ".kernelscope") as api:
        report = api.run(replay_id).report()
        assert "timing decisions (docs/decisions.md)" in report
        assert "GPU: NVIDIA H100 (virtual) (sm_90, 132 SMs) · 2 replayed · 1 guessed" in report
        assert "replayed from run 1 of .kernelscope (recorded on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" in report
        assert "  guessed   pad_mm aten.mm [4, 10] @ [10, 16] torch.float32: no pad" in report
        assert "launch configs of 1 Triton kernel(s): 1 replayed" in report
        assert "recorded, never asked for (1):" in report
        assert api.run(replay_id).to_dict()["decisions"]["counts"] == {"replayed": 2, "guessed": 1}
        assert "timing decisions" not in api.run(1).report()


def test_diff_names_the_decisions_made_differently(mlp_store, workspace):
    gpu_id = mlp_store.write_run(gpu_run(workspace))
    other = gpu_run(workspace)
    other.decisions[0] = pad("no pad")
    other_id = mlp_store.write_run(other)
    before, after = (diff_side(mlp_store.run(run_id).dump(), f"run {run_id}") for run_id in (gpu_id, other_id))
    diff = compare_runs(before, after)
    assert not diff.is_empty and diff.decisions.same == 2
    [change] = diff.decisions.changed
    assert (change.kind, change.choice_before, change.choice_after) == ("pad_mm", "pad", "no pad")
    text = render(diff, [], 0, "text")
    assert "timing decisions: 2 made alike, 1 made differently (guessed: A 0, B 0)" in text
    assert "~ pad_mm aten.mm [4, 16] @ [16, 10] torch.float32: pad (timed) -> no pad (timed)" in text
    assert "#### Timing decisions" in render(diff, [], 0, "md")
    assert json.loads(render(diff, [], 0, "json"))["decisions"]["changed"][0]["choice_after"] == "no pad"
    same = compare_runs(before, copy.deepcopy(before))
    assert same.is_empty and same.decisions.changed == []
    old = mlp_store.run(1).dump()
    old["schema_version"] = "4.0"
    for name in ("gpu", "decisions", "replay"):
        del old["run"][name]
    assert compare_runs(diff_side(old, "old"), before).decisions.only_after == {"autotune": 1, "pad_mm": 1,
                                                                               "triton_config": 1}


def test_cli_decisions_lists_exports_and_sets_the_default(mlp_store, workspace, capsys):
    from kernelscope.cli import main

    gpu_id = mlp_store.write_run(gpu_run(workspace))
    mlp_store.close()
    assert main(["decisions", str(gpu_id)]) == 0
    out = capsys.readouterr().out
    assert "  timed     pad_mm aten.mm [4, 16] @ [16, 10] torch.float32: pad" in out
    assert "  timed     launch config launch config of triton_poi_fused_gelu_0: XBLOCK=256 num_warps=4" in out
    assert main(["decisions", "latest", "-o", "gpu.json", "--default"]) == 0
    assert "wrote 3 decision(s) of run 2 to gpu.json" in capsys.readouterr().out
    assert load_file(workspace / "gpu.json").find("pad_mm", PAD_KEY).choice == "pad"
    assert (workspace / ".kernelscope" / "decisions.json").is_file()
    assert main(["decisions", "1", "-o", "none.json"]) == 2
    assert "run 1 holds no decisions a GPU made" in capsys.readouterr().err
    assert main(["decisions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"timed": 3}


def test_compile_with_an_unreadable_decisions_file_stops_before_compiling(run_cli, tmp_path):
    (tmp_path / "gpu.json").write_text("{")
    done = run_cli(["compile", "examples/mlp.py:make", "--store", str(tmp_path / "s"), "--decisions",
                    str(tmp_path / "gpu.json")])
    assert done.returncode == 2
    assert f"{tmp_path / 'gpu.json'}:1: not JSON" in done.stderr
    assert not (tmp_path / "s").exists()


# -- the engine's hooks, driven directly (no compile) ------------------------------------


def test_pad_mm_hooks_record_what_the_gpu_timed_and_replay_it():
    """Recording wraps pad_mm's own functions: a benchmark verdict (is_padded_faster) becomes a
    timed decision with both times; replay answers the same key from the recording."""
    import torch._inductor.fx_passes.pad_mm as pad_mm
    from torch._inductor.utils import fresh_cache

    from kernelscope.engine.decision_hooks import pad_mm_hooks
    from kernelscope.engine.decision_hooks.log import DecisionLog

    log = DecisionLog()
    with fresh_cache(), pad_mm_hooks.recording(log):
        assert pad_mm.is_padded_faster("key A", 0.006, 0.004) is True
        assert pad_mm.is_padded_faster("key B", 0.004, 0.0039) is False  # not 1.1 times faster
        assert pad_mm.get_cached_should_pad("key A") is True  # a second ask: pad_mm's cache
    first, second = log.decisions
    assert (first.key, first.choice, first.origin, first.timings) == ("key A", "pad", "timed",
                                                                      {"unpadded": 0.006, "padded": 0.004})
    assert first.rule == "timed on the GPU: padded 0.0040 ms x 1.1 vs unpadded 0.0060 ms"
    assert (second.choice, second.detail) == ("no pad", {"multiplier": 1.1})

    recorded = DecisionSet("gpu", {"gpu": H100}, log.decisions)
    replay = DecisionLog(recorded)
    with pad_mm_hooks.replaying(replay):
        assert pad_mm.get_cached_should_pad("key A") is True
        assert pad_mm.get_cached_should_pad("key B") is False
        assert pad_mm.get_cached_should_pad("key C") is False  # not recorded: guessed
    assert [d.origin for d in replay.decisions] == ["replayed", "replayed", "guessed"]
    assert replay.decisions[2].rule.startswith("no pad, as pad_mm answers when it must not time")
    assert replay.replay_record().unused == []


def test_autotune_hooks_record_choice_timings_and_replay_them():
    """select_algorithm's cache lookup (its real code, on a fresh cache) times the choices once:
    recorded per choice; replayed, each choice gets its recorded time back, a choice the
    recording lacks comes last, and a lookup it lacks is guessed (the first choice)."""
    from torch._inductor.select_algorithm import AlgorithmSelectorCache
    from torch._inductor.utils import fresh_cache

    from kernelscope.engine.decision_hooks import autotune_hooks
    from kernelscope.engine.decision_hooks.log import DecisionLog

    class Choice:  # what select_algorithm reads of a ChoiceCaller here
        def __init__(self, name, description=""):
            self.name, self.description = name, description

        def hash_key(self):
            return f"{self.name}-{self.description}"

    choice = Choice

    aten, small, big = choice("mm"), choice("triton_mm_7", "BLOCK_M=16"), choice("triton_mm_8", "BLOCK_M=64")
    inputs = "[('cuda', 'torch.float32', 8, 32, 32, 1, 0), ('cuda', 'torch.float32', 32, 16, 16, 1, 0)]"
    log = DecisionLog()
    with fresh_cache(), autotune_hooks.recording(log):
        timings = AlgorithmSelectorCache().lookup([aten, small, big], "mm", inputs,
                                                  lambda choices: {aten: 0.01, small: 0.005, big: math.inf})
    assert timings[small] == 0.005
    [decision] = log.decisions
    assert decision.key == f"mm|{inputs}|highest" and decision.summary == "mm(8x32, 32x16) torch.float32"
    assert decision.choice == "triton_mm BLOCK_M=16" and decision.timings["triton_mm BLOCK_M=64"] == math.inf

    replay = DecisionLog(DecisionSet("gpu", {"gpu": H100}, [decision]))
    again = [choice("mm"), choice("triton_mm_3", "BLOCK_M=16"), choice("triton_mm_4", "BLOCK_M=32")]
    with fresh_cache(), autotune_hooks.replaying(replay):
        replayed = AlgorithmSelectorCache().lookup(again, "mm", inputs, lambda choices: pytest.fail("timed"))
        guessed = AlgorithmSelectorCache().lookup(again, "mm", "[('cuda', 'other')]", lambda c: pytest.fail("timed"))
    assert [replayed[c] for c in again] == [0.01, 0.005, math.inf]
    assert min(again, key=replayed.__getitem__) is again[1]
    assert [guessed[c] for c in again] == [0.0, 0.0, 0.0]
    assert [d.origin for d in replay.decisions] == ["replayed", "guessed"]
    assert "1 of this compile's choices were not timed there" in replay.decisions[0].rule
    assert replay.decisions[1].rule.startswith("nothing timed: every choice taken as equally fast, so Inductor "
                                               "keeps its first (mm)")


def test_fusion_benchmarks_are_recorded_by_the_code_they_time(tmp_path, monkeypatch):
    from torch._inductor.codegen.triton import TritonScheduling

    from kernelscope.engine.decision_hooks import autotune_hooks
    from kernelscope.engine.decision_hooks.log import DecisionLog

    module_file = tmp_path / "cfused.py"
    module_file.write_text("def get_args(): pass\ndef call(args): pass\n")
    module = types.SimpleNamespace(__file__=str(module_file))
    monkeypatch.setattr(TritonScheduling, "benchmark_codegened_module", lambda self, mod, *a, **k: (0.25, mod.__file__))
    log = DecisionLog()
    with autotune_hooks.recording(log):
        assert TritonScheduling.benchmark_codegened_module(None, module, 8, node_names={"op1"}) == (
            0.25, str(module_file))
    [decision] = log.decisions
    assert (decision.kind, decision.key, decision.timings, decision.summary) == (
        "fusion_benchmark", module_key(module_file.read_text()), {"ms": 0.25}, "kernel of op1")
    replay = DecisionLog(DecisionSet("gpu", {"gpu": H100}, [decision]))
    other = types.SimpleNamespace(__file__=str(tmp_path / "other.py"))
    (tmp_path / "other.py").write_text("def call(args): return 1\n")
    with autotune_hooks.replaying(replay):
        assert TritonScheduling.benchmark_codegened_module(None, module) == (0.25, str(module_file))
        assert TritonScheduling.benchmark_codegened_module(None, other) == (0.0, str(tmp_path / "other.py"))
    assert [d.origin for d in replay.decisions] == ["replayed", "guessed"]


def test_a_recording_from_another_gpu_architecture_is_not_replayed():
    from kernelscope.engine.decision_hooks import session
    from kernelscope.engine.decision_hooks.log import DecisionLog

    a100 = {"name": "NVIDIA A100-SXM4-80GB", "capability": [8, 0], "sm_count": 108}
    log = DecisionLog(DecisionSet("a100.json", {"gpu": a100, "torch": "2.11.0", "triton": "3.6.0"}, [pad()]))
    session.check_gpu(log, session.gpu_of("virtual-cuda"))
    assert log.find("pad_mm", PAD_KEY) is None
    assert log.replay_record().unused[0].key == PAD_KEY
    warnings = session.replay_warnings(log, session.gpu_of("virtual-cuda"), "2.11.0", "3.6.0")
    assert warnings == ["decisions from a100.json were recorded on NVIDIA A100-SXM4-80GB (sm_80), not an sm_90 GPU: "
                        "none can be replayed"]


def test_launch_configs_become_decisions_and_replay_onto_the_same_kernel(workspace):
    from kernelscope.engine.decision_hooks import session
    from kernelscope.engine.decision_hooks.log import DecisionLog

    run = gpu_run(workspace)
    log = DecisionLog()
    gelu = next(k for k in run.graphs[0].kernels if k.kind == "triton")
    session.launch_decisions(run.graphs, {id(gelu): {"XBLOCK=256 num_warps=4 num_stages=1": 0.002}}, log)
    [decision] = log.decisions
    assert (decision.choice, decision.origin, decision.rule) == ("XBLOCK=256 num_warps=4 num_stages=1", "timed",
                                                                 "timed on the GPU: the fastest of 2 configs")
    virtual = make_mlp_run(workspace)
    replay = DecisionLog(DecisionSet("run 1", {"gpu": H100}, [decision]))
    session.replay_launches(virtual.graphs, replay)
    launched = next(k for k in virtual.graphs[0].kernels if k.kind == "triton").launch
    assert launched["config"]["kwargs"] == {"XBLOCK": 256} and launched["replayed_from"] == "run 1"
    assert all(k.launch is None for k in virtual.graphs[1].kernels)  # another kernel: its code differs
    assert replay.decisions[0].rule == "replayed from run 1 (timed on the GPU: the fastest of 2 configs)"


def test_the_language_server_option_and_the_watch_request_carry_decisions():
    from kernelscope.lsp.options import OptionsError, ServerOptions

    options = ServerOptions.from_dict({"decisions": "gpu.json"})
    assert options.decisions == "gpu.json" and "decisions" in options.given
    assert ServerOptions.from_dict({"decisions": None}).decisions is None
    with pytest.raises(OptionsError, match="option 'decisions' must be a string or null"):
        ServerOptions.from_dict({"decisions": 3})
