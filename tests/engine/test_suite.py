"""The model suite (bench/suite/, bench/suite.py): one model per family, inference and training,
recorded on virtual-cuda as `python bench/suite.py` records it (a fresh `kernelscope compile`
process each), must meet the suite's floors. The whole suite runs with `python bench/suite.py`.

The representatives are recorded once per test session, two at a time.
"""
from __future__ import annotations

import ast
import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import REPO


def _load_suite_cli():
    """bench/suite.py (its name is shared with the bench/suite/ package, so load it by path)."""
    spec = importlib.util.spec_from_file_location("suite_cli", REPO / "bench" / "suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite_cli = _load_suite_cli()
registry = importlib.import_module("suite.registry")  # bench/suite/registry.py (suite_cli put bench/ on sys.path)
CASES = [(family, train) for family in registry.FAMILIES for train in (False, True)]


@pytest.fixture(scope="session")
def representative_rows():
    """{(family, train): the suite's row} for every family's representative, recorded once."""
    jobs = [(registry.BY_NAME[registry.REPRESENTATIVES[family]], train) for family, train in CASES]
    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = pool.map(lambda job: suite_cli.record(job[0], job[1], "virtual-cuda", timeout=600), jobs)
    return dict(zip(CASES, rows))


@pytest.mark.slow
@pytest.mark.parametrize("family, train", CASES,
                         ids=[f"{family}-{'train' if train else 'inference'}" for family, train in CASES])
def test_family_representative_meets_the_floors(representative_rows, family, train):
    row = representative_rows[(family, train)]
    assert row["recorded"], f"{row['model']} {row['mode']}: {row.get('error')}"
    assert row["provenance"] == "line" and row["kernels"] >= 3
    coverage = row["coverage"]
    for key, floor in suite_cli.FLOORS.items():
        share = coverage[key]["share"]
        if key == "backward_nodes_with_source" and not train:
            assert share is None  # an inference run has no backward graph
            continue
        assert share is not None and share >= floor, f"{row['model']} {row['mode']}: {key} {coverage[key]}"
    assert suite_cli.missed_floors(row) == []


def test_the_suite_covers_every_family_with_at_least_40_models():
    assert len(registry.MODELS) >= 40
    assert {model.family for model in registry.MODELS} == set(registry.FAMILIES)
    assert set(registry.REPRESENTATIVES) == set(registry.FAMILIES)
    for family, name in registry.REPRESENTATIVES.items():
        assert registry.BY_NAME[name].family == family


def test_every_registered_factory_is_defined_in_its_module():
    """Read without importing (the builders import transformers, timm, diffusers)."""
    defined: dict[str, set[str]] = {}
    for model in registry.MODELS:
        if model.module not in defined:
            tree = ast.parse((registry.HERE / f"{model.module}.py").read_text())
            names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        elements = target.elts if isinstance(target, ast.Tuple) else [target]
                        names |= {e.id for e in elements if isinstance(e, ast.Name)}
            defined[model.module] = names
        for train in (False, True):
            assert model.factory(train) in defined[model.module], model.spec(train)


def test_a_row_under_a_floor_or_not_recorded_fails_the_suite():
    full = {key: {"covered": 100, "total": 100, "share": 1.0} for key in suite_cli.FLOORS}
    row = {"recorded": True, "provenance": "line", "coverage": full}
    assert suite_cli.missed_floors(row) == []
    low = dict(full, wrapper_lines={"covered": 94, "total": 100, "share": 0.94})
    assert suite_cli.missed_floors(dict(row, coverage=low)) == ["wrapper_lines"]
    assert suite_cli.missed_floors(dict(row, provenance="kernel")) == ["provenance"]
    assert suite_cli.missed_floors({"recorded": False, "error": "x"}) == ["recorded"]
    no_backward = dict(full, backward_nodes_with_source={"covered": 0, "total": 0, "share": None})
    assert suite_cli.missed_floors(dict(row, coverage=no_backward)) == []


def test_a_cpu_row_needs_every_kernel_agreeing_and_every_node_traced():
    """--target cpu holds a row to issue 36's floors: agreement and node-to-source 100%."""
    full = {key: {"covered": 100, "total": 100, "share": 1.0} for key in suite_cli.CPU_FLOORS}
    row = {"recorded": True, "provenance": "line", "target": "cpu", "coverage": full}
    assert suite_cli.missed_floors(row) == []
    one_short = dict(full, kernel_agreement={"covered": 99, "total": 100, "share": 0.99},
                     forward_nodes_with_source={"covered": 99, "total": 100, "share": 0.99})
    assert suite_cli.missed_floors(dict(row, coverage=one_short)) == ["kernel_agreement", "forward_nodes_with_source"]
    assert suite_cli.missed_floors(dict(row, coverage=one_short, target="virtual-cuda")) == []
    lines_low = dict(full, kernel_lines={"covered": 94, "total": 100, "share": 0.94})
    assert suite_cli.missed_floors(dict(row, coverage=lines_low)) == ["kernel_lines"]


def test_target_cpu_runs_one_model_per_family_unless_only_names_others():
    def rows(*argv):
        return [(m.name, train) for m, train in suite_cli.selected(suite_cli.build_parser().parse_args(argv))]

    cpu = rows("--target", "cpu")
    assert {name for name, _ in cpu} == set(registry.CPU_MODELS.values()) and len(cpu) == 2 * len(registry.FAMILIES)
    assert {registry.BY_NAME[name].family for name in registry.CPU_MODELS.values()} == set(registry.FAMILIES)
    assert all(registry.BY_NAME[name].family == family for family, name in registry.CPU_MODELS.items())
    assert rows("--target", "cpu", "--only", "bert") == [("bert", False), ("bert", True)]
    assert rows("--target", "cpu", "--family", "conv", "--mode", "train") == [(registry.CPU_MODELS["conv"], True)]
    assert len(rows()) == 2 * len(registry.MODELS)


def test_a_failed_recording_keeps_its_one_line_error_without_the_site_packages_prefix():
    stderr = ("Traceback ...\nkernelscope: error: /x/.venv/lib/python3.11/site-packages/transformers/"
              "cache_utils.py:125: Inductor failed: boom (the last good run in the store is unchanged)\n")
    assert suite_cli.one_line_error(stderr, 1).startswith("transformers/cache_utils.py:125: Inductor failed: boom")
    assert "signal 9" in suite_cli.one_line_error("", -9)


def test_resume_takes_the_rows_a_report_already_holds(tmp_path):
    rows = [{"model": "bert", "mode": "train"}, {"model": "bert", "mode": "inference"},
            {"model": "llama", "mode": "train"}]
    report = tmp_path / "report.json"
    report.write_text(__import__("json").dumps({"partial": True, "rows": rows}))
    bert = registry.BY_NAME["bert"]
    taken = suite_cli.resumed_rows(report, [(bert, True), (registry.BY_NAME["t5"], True)])
    assert taken == {("bert", True): {"model": "bert", "mode": "train"}}


def test_a_compare_row_names_the_mode_and_gives_gpu_checks_verdict():
    kernel = {"name": "triton_poi_fused_add_0", "kind": "triton", "nodes": ["add"], "inductor_nodes": ["add"],
              "source": "x = 1", "lines": 1, "specific": 1}
    side = {"torch": "2.11.0", "triton": "3.6.0", "provenance": "line", "warnings": [], "audit": {},
            "pad_mm_timed": [], "graphs": [{"compile_id": "0/0", "kind": "forward", "kernels": [kernel]}],
            "wall": 3.0}
    row = suite_cli.compare(registry.BY_NAME["bert"], True, dict(side), dict(side))
    assert (row["model"], row["mode"], row["verdict"], row["wall"]) == ("bert", "train", "identical", 6.0)
    changed = dict(side, graphs=[{"compile_id": "0/0", "kind": "forward", "kernels": [dict(kernel, source="x = 2")]}])
    assert suite_cli.compare(registry.BY_NAME["bert"], True, dict(side), changed)["verdict"] == "DIFFERENT"


@pytest.mark.slow
def test_compare_with_replay_records_the_real_sides_decisions_and_replays_them():
    """`--compare --replay`'s chain, with virtual-cuda standing for the GPU (no GPU here): the
    real side writes its decisions file and the replayed side reads it; a virtual-cuda run
    made no GPU decision, so the file holds none and every decision is listed as guessed."""
    model = registry.BY_NAME["alexnet"]
    real, replayed = suite_cli.record_replayed_pair(model, False, timeout=600, real_target="virtual-cuda")
    row = suite_cli.compare(model, False, real, replayed, replayed=True)
    assert (row["model"], row["mode"], row["verdict"], row["replayed"]) == ("alexnet", "inference", "identical", True)
    report = row["decisions"]
    assert report["guessed"] and all(d["origin"] == "guessed" for d in report["guessed"])
    assert report["real_decisions"] == [d for d in real["decisions"]]
    assert not any(name.endswith(" replayed") for name in report["virtual"])


def test_replay_is_refused_without_compare(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["suite.py", "--replay", "--only", "bert"])
    with pytest.raises(SystemExit) as stopped:
        suite_cli.main()
    assert stopped.value.code == 2 and "use it with --compare" in capsys.readouterr().err
