"""Caches never make provenance silently missing: with Inductor's FX-graph cache warm
for the very graph being recorded, a recording still generates afresh and yields
the same links as a cold one."""
from __future__ import annotations

import pytest
from conftest import EXAMPLES, REPO

pytestmark = pytest.mark.slow


def links(run) -> dict:
    """Everything a query can reach, independent of run ids and cache paths."""
    found = {}
    for graph in run.graphs:
        found[graph.key] = {
            "kernels": sorted((k.name, tuple(sorted(k.nodes))) for k in graph.kernels),
            "kernel_lines": sorted((k.name, row.line, row.text, tuple(row.nodes), row.reason)
                                   for k in graph.kernels for row in k.lines),
            "wrapper_lines": sorted((row.text, tuple(row.nodes), row.reason) for row in graph.wrapper_lines
                                    if "# kernel path:" not in row.text),
        }
    return found


def test_a_warm_fx_graph_cache_yields_the_same_links(recordings, tmp_path, monkeypatch):
    import torch
    from torch._dynamo.utils import counters
    from torch._inductor import config

    from kernelscope.engine import targets
    from kernelscope.engine.devices.device_target import device_target
    from kernelscope.engine.recorder import RecordOptions, record_factory

    cold = recordings.get("mlp")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    spec = f"{EXAMPLES / 'mlp'}.py:make"
    model, inputs = targets.load_factory(targets.parse_factory_spec(spec))
    hits = []
    for _ in range(2):  # the first compile fills the cache, the second must hit it
        torch._dynamo.reset()
        counters.clear()
        # The same Inductor settings a recording uses, so the recording's graph would hit this entry.
        with config.patch({"fx_graph_cache": True, "fx_graph_remote_cache": False, "compile_threads": 1,
                           "trace.provenance_tracking_level": 1}), device_target("virtual-cuda"), torch.no_grad():
            torch.compile(model)(*inputs)
        hits.append(counters["inductor"].get("fxgraph_cache_hit", 0))
    assert hits == [0, 1]

    with config.patch(fx_graph_cache=True):
        warm = record_factory(spec, RecordOptions(workspace=REPO))
    assert warm.provenance == "line" and not warm.warnings
    assert links(warm) == links(cold)
