"""virtual-cuda replaying a GPU's timing decisions, on real compiles (docs/decisions.md).

No GPU here, so the recordings are written by hand the way `--target cuda` writes them,
starting from what virtual-cuda asks (its guessed decisions carry Inductor's own keys):
pad_mm says "pad" for the small CNN's head matmul, max-autotune found a Triton template
fastest for the MLP's GEMMs, a Triton kernel's autotuner kept a config that is not the
one Inductor runs untimed. virtual-cuda's code must change exactly as a GPU's would.
"""
from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES, ZOO

from kernelscope.decisions.keys import triton_config_key
from kernelscope.decisions.model import DecisionSet, write_file
from kernelscope.run_record import Decision

pytestmark = pytest.mark.slow

H100 = {"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "sm_count": 132}
SMALL_CNN_TRAIN = f"{ZOO / 'small_cnn'}.py:make_train"
SMALL_CNN = f"{ZOO / 'small_cnn'}.py:make"
MLP = f"{EXAMPLES / 'mlp'}.py:make"


def recorded_on(run) -> dict:
    return {"gpu": H100, "torch": run.torch_version, "triton": run.triton_version, "target": run.target,
            "device": "cuda"}


def as_timed(decision: Decision, choice: str, timings: dict) -> Decision:
    return Decision(decision.kind, decision.key, choice, "timed", "timed on the GPU", decision.summary,
                    decision.where, decision.kernel, timings, dict(decision.detail))


def kernel_names(run, kinds=("triton", "template")) -> list[str]:
    return [kernel.name for graph in run.graphs for kernel in graph.kernels if kernel.kind in kinds]


@pytest.fixture(scope="module")
def pad_head(recordings, tmp_path_factory) -> tuple:
    """(the unreplayed run, the replaying run, the decisions file) of the small CNN in training
    with a dynamic batch, a GPU having padded the backward matmul of the head's weight."""
    plain = recordings.get_spec(SMALL_CNN_TRAIN, train=True, dynamic=True)
    asked = [d for d in plain.decisions if d.kind == "pad_mm"]
    head = next(d for d in asked if d.summary.startswith("aten.mm [10, s"))
    path = tmp_path_factory.mktemp("decisions") / "gpu.json"
    write_file(DecisionSet("gpu", recorded_on(plain), [
        as_timed(head, "pad", {"padded": 0.0041, "unpadded": 0.0062}),
        Decision("pad_mm", "a matmul this model does not have", "pad", "timed", "timed on the GPU")]), path)
    replayed = recordings.get_spec(SMALL_CNN_TRAIN, train=True, dynamic=True, decisions=str(path))
    return plain, replayed, path


def test_a_replayed_pad_mm_choice_pads_as_the_gpu_did(pad_head):
    plain, replayed, path = pad_head
    assert plain.replay is None and {d.origin for d in plain.decisions} == {"guessed"}
    extra = sorted(set(kernel_names(replayed)) - set(kernel_names(plain)))
    assert len(kernel_names(replayed)) == len(kernel_names(plain)) + 1
    assert [name.rsplit("_", 1)[0] for name in extra] == ["triton_poi_fused_mm_t"]  # the padded transpose
    padded = next(d for d in replayed.decisions if d.kind == "pad_mm" and d.origin == "replayed")
    assert padded.choice == "pad" and padded.rule == f"replayed from {path}"
    assert padded.timings == {"padded": 0.0041, "unpadded": 0.0062}
    guessed = [d for d in replayed.decisions if d.origin == "guessed"]
    assert {d.kind for d in guessed} == {"pad_mm", "mm_compute_bound"}  # what the recording did not hold
    assert all(d.rule for d in guessed)
    assert [d.key for d in replayed.replay.unused] == ["a matmul this model does not have"]


def test_the_cli_replays_lists_shows_and_diffs_decisions(pad_head, run_cli, tmp_path):
    """compile --decisions FILE says what it replayed and guessed; `decisions`, `show`, the dump
    and `diff` against a run without them name the decision made differently."""
    _, _, path = pad_head
    store = tmp_path / ".kernelscope"
    common = ["compile", SMALL_CNN_TRAIN, "--train", "--dynamic", "--store", str(store)]
    done = run_cli([*common, "--decisions", str(path)])
    assert done.returncode == 0, done.stderr
    assert "timing decisions: 1 replayed · " in done.stdout and f"(replayed from {path})" in done.stdout
    assert "decision(s) guessed:" in done.stdout and "(rule: " in done.stdout
    assert "1 recorded decision(s) no compile asked for (1 pad_mm)" in done.stdout
    done = run_cli([*common, "--decisions", "none", "--json"])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["decisions"]["replayed_from"] is None and summary["decisions"]["guessed"]
    assert "no GPU recording: --decisions" in summary["decisions"]["lines"][1]
    shown = run_cli(["show", "1", "--store", str(store)])
    assert shown.returncode == 0 and "timing decisions (docs/decisions.md)" in shown.stdout
    assert "  replayed  pad_mm aten.mm [10, s" in shown.stdout
    listed = run_cli(["decisions", "1", "--store", str(store)])
    assert listed.returncode == 0 and f"replayed from {path}" in listed.stdout
    dumped = run_cli(["dump", "--run", "1", "--store", str(store), "-o", str(tmp_path / "one.json")])
    assert dumped.returncode == 0, dumped.stderr
    assert run_cli(["validate", str(tmp_path / "one.json")]).returncode == 0
    diff = run_cli(["diff", str(tmp_path / "one.json"), "2", "--store", str(store)])
    assert "made differently" in diff.stdout
    assert "pad (replayed) -> no pad (guessed)" in diff.stdout, diff.stdout


def test_a_replayed_pad_in_inference_pads_the_head_addmm(recordings, tmp_path):
    """The small CNN in inference: a GPU that padded the head's addmm gets its padded kernels."""
    plain = recordings.get_spec(SMALL_CNN)
    head = next(d for d in plain.decisions if d.kind == "pad_mm" and d.summary.startswith("aten.addmm"))
    path = tmp_path / "gpu.json"
    write_file(DecisionSet("gpu", recorded_on(plain), [as_timed(head, "pad", {"padded": 0.003, "unpadded": 0.005})]),
               path)
    replayed = recordings.get_spec(SMALL_CNN, decisions=str(path))
    assert len(kernel_names(replayed)) > len(kernel_names(plain))
    assert any("addmm" in name for name in set(kernel_names(replayed)) - set(kernel_names(plain)))
    assert replayed.replay.unused == []


@pytest.fixture(scope="module")
def autotuned_mlp(recordings, tmp_path_factory) -> tuple:
    """The MLP in training under max-autotune: without decisions, and replaying a GPU that
    found a Triton template fastest for every GEMM."""
    plain = recordings.get_spec(MLP, train=True, max_autotune=True)
    asked = [d for d in plain.decisions if d.kind == "autotune"]
    timed = []
    for decision in asked:
        choices = decision.detail["choices"]
        template = next(choice for choice in choices if choice.startswith("triton_mm"))
        timed.append(as_timed(decision, template, {choice: (0.004 if choice == template else 0.009)
                                                   for choice in choices}))
    path = tmp_path_factory.mktemp("autotune") / "gpu.json"
    write_file(DecisionSet("gpu", recorded_on(plain), timed), path)
    return plain, recordings.get_spec(MLP, train=True, max_autotune=True, decisions=str(path)), asked


def test_replayed_autotune_choices_make_the_gpus_templates(autotuned_mlp):
    plain, replayed, asked = autotuned_mlp
    assert len(asked) == 5 and all(d.choice in ("mm", "addmm") and d.origin == "guessed" for d in asked)
    assert kernel_names(plain, ("template",)) == []
    templates = kernel_names(replayed, ("template",))
    assert len(templates) == 5 and all(name.startswith("triton_tem_fused_") for name in templates)
    assert kernel_names(replayed, ("extern",)) == []  # as on the GPU: no ATen GEMM left
    replayed_choices = [d for d in replayed.decisions if d.kind == "autotune"]
    assert {d.origin for d in replayed_choices} == {"replayed"} and len(replayed_choices) == 5
    assert all(d.choice.startswith("triton_mm ") for d in replayed_choices)


def test_a_replayed_launch_config_is_the_one_built_below_the_kernel(recordings, tmp_path):
    """A kernel whose autotuner holds several configs: the GPU's choice, replayed, is built
    (and `chosen_by` says so), not the config Inductor runs untimed."""
    from kernelscope.asm.model import LaunchConfig
    from kernelscope.engine.asm_build import KernelToBuild, _load_autotuner, build_run_asm, heuristics_observed
    from kernelscope.engine.devices import virtual_cuda
    from kernelscope.store import StoreBackend

    plain = recordings.get_spec(MLP)
    kernel = next(k for graph in plain.graphs for k in graph.kernels if k.name.startswith("triton_per_fused__softmax"))
    file = tmp_path / f"{kernel.name}.py"
    file.write_text(kernel.source)  # Triton reads a kernel's source from its file
    with virtual_cuda.pretend_cuda_present(), heuristics_observed() as picks:
        autotuner = _load_autotuner(KernelToBuild(kernel.name, str(file), kernel.source))
        untimed = [LaunchConfig.of(c.kwargs, c.num_warps, c.num_stages) for c in picks[id(autotuner.fn)]]
        candidates = [LaunchConfig.of(c.kwargs, c.num_warps, c.num_stages) for c in autotuner.configs]
    assert len(candidates) > 1
    chosen = next(config for config in reversed(candidates) if config not in untimed)
    detail = {"config": chosen.to_dict(), "candidates": [c.to_dict() for c in candidates], "registers": 30,
              "spills": 0, "shared_bytes": 0}
    path = tmp_path / "gpu.json"
    write_file(DecisionSet("gpu", recorded_on(plain), [Decision(
        "triton_config", triton_config_key(kernel.name, kernel.source), chosen.label, "timed",
        f"timed on the GPU: the fastest of {len(candidates)} configs", f"launch config of {kernel.name}",
        timings={chosen.label: 0.002}, detail=detail)]), path)
    replayed = recordings.get_spec(MLP, decisions=str(path))
    launched = next(k for graph in replayed.graphs for k in graph.kernels if k.name == kernel.name).launch
    assert launched["config"] == chosen.to_dict() and launched["replayed_from"] == str(path)
    with StoreBackend(tmp_path / ".kernelscope") as store:
        run_id = store.write_run(replayed)
        kernel_id = next(k.kernel_id for k in store.asm.pending(run_id) if k.name == kernel.name)
        summary = build_run_asm(store, run_id, [kernel_id])
        assert summary.built == 1, summary.failed
        facts = store.asm.infos([kernel_id])[kernel_id].facts
        assert facts.config == chosen
        assert facts.chosen_by == (f"replayed from {path}: the config the GPU launched for this kernel "
                                   f"(the fastest of {len(candidates)} configs the GPU timed)")
        dumped = next(k for g in store.run(run_id).dump()["run"]["graphs"] for k in g["kernels"]
                      if k["name"] == kernel.name)
        assert dumped["launch"]["replayed_from"] == str(path)


def test_the_engine_worker_replays_the_workspace_default(tmp_path):
    """The language server's and watch's compiles go through the engine worker: without a
    `decisions` option it replays the store's decisions.json; `none` replays nothing."""
    from kernelscope.watch.worker_client import WorkerClient

    store = tmp_path / ".kernelscope"
    store.mkdir()
    write_file(DecisionSet("gpu", {"gpu": H100}, [
        Decision("pad_mm", "a matmul the MLP does not have", "pad", "timed", "timed on the GPU")]),
        store / "decisions.json")
    client = WorkerClient(cwd=tmp_path, preload_device="virtual-cuda")
    params = {"target": MLP, "store": str(store), "workspace": str(tmp_path), "options": {"device": "virtual-cuda"}}
    client.start()
    try:
        default = client.request("record", params)["decisions"]
        assert default["replayed_from"] == str(store / "decisions.json") and default["unused"] == 1
        none = client.request("record", {**params, "options": {"device": "virtual-cuda", "decisions": "none"}})
        assert none["decisions"] is None or none["decisions"]["replayed_from"] is None
    finally:
        client.stop()
