"""The Python API: `kernelscope.open` / `record` / `recording`, a Run and a line's Answer.

The CLI's read commands and `compile`/`run` go through the same functions, so the
API must answer exactly what the CLI prints: checked on a synthetic store (fast) and
on real recordings (slow: one in-process record of examples/mlp.py's model, one
`recording()` block, one decorated function). tests/api/test_notebook.py runs the API in
a real Jupyter kernel."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from synthetic_runs import GELU_LINE, make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)

import kernelscope
import kernelscope.cli
from kernelscope.errors import CompileError, StoreError, TargetError, UserError

READ_COMMANDS = ["runs", "show", "query", "dump", "validate"]


@pytest.fixture
def cli(monkeypatch, capsys):
    """`kernelscope ARGS...` in-process (not a terminal: plain text); (exit code, stdout, stderr)."""
    monkeypatch.setattr(kernelscope.cli, "SUBCOMMANDS", READ_COMMANDS)

    def run(*argv: str) -> tuple[int, str, str]:
        code = kernelscope.cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


# -- the API answers what the CLI prints (a synthetic store) ----------------------------


def test_query_answers_what_the_cli_prints(mlp_store, cli):
    with kernelscope.open(".kernelscope") as store:
        for options, flags in [({}, []), ({"detail": True}, ["--detail"]),
                               ({"direction": "down", "detail": True}, ["--direction", "down", "--detail"]),
                               ({"module": "fc1"}, ["--module", "fc1"]), ({"direct_only": True}, ["--direct-only"])]:
            answer = store.query(f"examples/mlp.py:{GELU_LINE}", **options)
            code, out, _ = cli("query", f"examples/mlp.py:{GELU_LINE}", *flags)
            assert code == 0 and str(answer) + "\n" == out, flags
        answer = store.query("examples/mlp.py", GELU_LINE)
        assert answer.summary and answer.overview is not None and answer.run_id == 1 and not answer.empty
        assert answer.text.strip() == "h = torch.nn.functional.gelu(h)"
        assert [group.label for group in answer.groups] == ["", ""]
        # --json is the whole chain (detail), as the API's to_dict()
        detailed = store.run(1).query(f"examples/mlp.py:{GELU_LINE}", detail=True)
        assert json.loads(cli("query", f"examples/mlp.py:{GELU_LINE}", "--json")[1]) == json.loads(
            json.dumps(detailed.to_dict()))
        assert {kernel.name for chain in detailed.result.graphs for kernel in chain.kernels} >= {
            "triton_poi_fused_gelu_0", "triton_poi_fused_gelu_gelu_backward_0"}
        # a generated file's line answers up, as the CLI's
        kernel_line = ".kernelscope/runs/1/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py:17"
        assert str(store.query(kernel_line, direction="up")) + "\n" == cli("query", kernel_line, "--direction", "up")[1]
        # an empty answer names the lines that have one
        empty = store.query("examples/mlp.py:1")
        assert empty.empty and empty.linked_lines and str(empty) + "\n" == cli("query", "examples/mlp.py:1")[1]


def test_runs_show_and_dump_answer_what_the_cli_prints(mlp_store, workspace, cli, tmp_path):
    mlp_store.write_run(make_mlp_run(workspace, created=1_763_900_000.0))
    with kernelscope.open() as store:
        runs = store.runs
        assert [run.id for run in runs] == [2, 1] and store.latest == runs[0]
        assert repr(runs) + "\n" == cli("runs")[1]
        assert runs.to_dicts() == json.loads(cli("runs", "--json")[1])
        run = store.run(1)
        assert str(run) + "\n" == cli("show", "1")[1]
        assert json.loads(json.dumps(run.to_dict())) == json.loads(cli("show", "1", "--json")[1])
        assert run.dump() == json.loads(cli("dump", "--run", "1")[1])
        run.dump(tmp_path / "api.json", include_volatile=True)
        cli("dump", "--run", "1", "--include-volatile", "-o", str(tmp_path / "cli.json"))
        assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()


def test_a_run_reads_as_show_does(mlp_store):
    with kernelscope.open() as store:
        run = store.latest
        assert (run.id, run.target, run.summary.mode) == (1, "examples/mlp.py:make", "train")
        assert [graph.kind for graph in run.graphs] == ["forward", "backward"]
        assert "triton_poi_fused_gelu_0" in [kernel.name for kernel in run.kernels]
        assert [(brk.file, brk.line) for brk in run.graph_breaks] == [("examples/mlp.py", 18)]
        assert [recompile.compile_id for recompile in run.recompiles] == ["0/1"]
        assert run.profile is None and run.asm == {} and run.distributed.rank is None
        assert "FX graph cache bypassed for recorded graphs" in run.warnings
        assert isinstance(run.modules, list)
        assert repr(run) == "<kernelscope run 1: examples/mlp.py:make · virtual-cuda · train · 2 graph(s), 5 kernel(s)>"
        assert repr(store).endswith(": 1 run(s)>")


def test_jupyter_shows_the_summary_and_the_fusion_picture(mlp_store):
    with kernelscope.open() as store:
        run = store.latest
        page = run._repr_html_()
        assert '<h3>Run 1 <span class="target">examples/mlp.py:make</span></h3>' in page
        assert "<tr><th>kernel lines with nodes</th><td>93.8% (15/16)</td></tr>" in page
        assert "<tr><th>graph breaks</th><td>1</td></tr>" in page
        assert '<div class="ks-fusion"><svg class="fusion"' in page and page.count('<path class="fedge"') > 0
        assert "style=" not in page.split("</style>", 1)[1], "styles by class: the SVG is the VS Code overview's"
        # the picture is the run's: each kernel's model lines, one edge per pair
        fusion = run.fusion()
        sources = run.view.all_kernel_sources()
        assert len(fusion.edges) == sum(len(lines) for lines in sources.values())
        assert f"mlp.py:{GELU_LINE}  h = torch.nn.functional.gelu(h)" in run.fusion_svg()
        answer = store.query(f"examples/mlp.py:{GELU_LINE}")
        html = answer._repr_html_()
        assert '<ul class="ks-tree">' in html and "triton_poi_fused_gelu_0" in html
        assert '<span class="ks-bold ks-cyan">graph 0/0 forward: ' in html
        assert "<td>examples/mlp.py:make</td>" in store._repr_html_()


# -- errors ---------------------------------------------------------------------------


def test_errors_are_one_line_and_name_what_to_do(mlp_store, workspace, tmp_path):
    with pytest.raises(StoreError, match=rf"no kernelscope store at {tmp_path / 'nowhere'} — run `kernelscope compile"):
        kernelscope.open(tmp_path / "nowhere")
    store = kernelscope.open()
    with pytest.raises(StoreError, match="there is no run 7 in this store"):
        store.run(7)
    with pytest.raises(UserError, match=r"line 999 is out of range for examples/mlp\.py: give a line 1-"):
        store.latest.query("examples/mlp.py:999")
    with pytest.raises(StoreError, match="examples/other.py"):
        store.query("examples/other.py:3")
    with pytest.raises(UserError, match="expected FILE:LINE"):
        store.query("examples/mlp.py")
    with pytest.raises(UserError, match="a line number counts from 1"):
        store.query("examples/mlp.py", 0)
    with pytest.raises(UserError, match="direction must be one of up, down, both"):
        store.query(f"examples/mlp.py:{GELU_LINE}", direction="sideways")
    with pytest.raises(UserError, match="unknown target 'tpu'"):
        kernelscope.record(lambda x: x, 1, target="tpu", store=store)
    run = store.latest
    store.close()
    with pytest.raises(StoreError, match=r"was closed: open it again with kernelscope\.open"):
        _ = run.kernels
    assert repr(store).endswith(": closed>")


def test_import_is_cheap_and_reading_never_imports_torch(mlp_store, workspace):
    code = (
        "import sys\n"
        "import kernelscope\n"
        "assert sorted(m for m in sys.modules if m.startswith('kernelscope')) == "
        "['kernelscope', 'kernelscope.version'], sys.modules\n"
        "assert kernelscope.record and kernelscope.recording\n"  # the API, not the engine
        "with kernelscope.open() as store:\n"
        f"    store.query('examples/mlp.py:{GELU_LINE}')._repr_html_(), store.latest._repr_html_(), str(store.latest)\n"
        "    store.latest.dump()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'numpy')\n"
        "             or m.startswith('kernelscope.engine')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_public_surface():
    assert set(kernelscope.__all__) == {"Answer", "CompileError", "Recorder", "Run", "Runs", "Store", "StoreError",
                                        "TargetError", "UserError", "__version__", "open", "record", "recording"}
    for name in kernelscope.__all__:
        assert getattr(kernelscope, name) is not None and name in dir(kernelscope)
    # kernelscope.record is the API's function, also once the dataclasses (kernelscope/run_record.py) are loaded
    importlib.import_module("kernelscope.run_record")
    assert inspect.isfunction(kernelscope.record) and kernelscope.record.__module__ == "kernelscope.api.recording"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        kernelscope.nothing  # noqa: B018
    assert (REPO / "kernelscope" / "py.typed").is_file()


def signature_text(function, name: str) -> str:
    """`name(param: annotation = default, ...) -> return`, as docs/python-api.md writes it."""
    signature = inspect.signature(function)
    parts, starred = [], False
    for parameter in signature.parameters.values():
        if parameter.name == "self":
            continue
        text = parameter.name
        if parameter.kind is parameter.VAR_POSITIONAL:
            text, starred = f"*{text}", True
        elif parameter.kind is parameter.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        if parameter.annotation is not parameter.empty:
            text += f": {parameter.annotation}"
        if parameter.default is not parameter.empty:
            text += f" = {parameter.default!r}"
        parts.append(text)
    returns = "" if signature.return_annotation is signature.empty else f" -> {signature.return_annotation}"
    return f"{name}({', '.join(parts)}){returns}"


def test_the_reference_has_every_public_signature():
    """docs/python-api.md's reference names each function, method and property with its
    current signature (a changed signature fails here until the page says so)."""
    page = (REPO / "docs" / "python-api.md").read_text()
    wanted = [signature_text(getattr(kernelscope, name), f"kernelscope.{name}")
              for name in ("open", "record", "recording")]
    for cls in (kernelscope.Store, kernelscope.Runs, kernelscope.Run, kernelscope.Answer):
        for name, value in vars(cls).items():
            if name.startswith("_"):
                continue
            if isinstance(value, property):
                wanted.append(f"{cls.__name__}.{name}: {inspect.signature(value.fget).return_annotation}")
            elif callable(value):
                wanted.append(signature_text(value, f"{cls.__name__}.{name}"))
    assert len(wanted) > 35
    missing = [text for text in wanted if f"`{text}`" not in page]
    assert not missing, "\n".join(missing)


# -- real recordings (slow) -------------------------------------------------------------


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"api_example_{name}", REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorded_mlp(tmp_path_factory):
    """examples/mlp.py's model recorded in-process with kernelscope.record (training), once."""
    store = tmp_path_factory.mktemp("api") / ".kernelscope"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        model, inputs = _load_example("mlp").make()
        run = kernelscope.record(model, *inputs, train=True, target="virtual-cuda", store=store)
    yield run
    run.store.close()


@pytest.mark.slow
def test_record_a_model_as_compile_records_its_factory(recorded_mlp, recordings, tmp_path, monkeypatch):
    run = recorded_mlp
    assert (run.target, run.summary.device, run.summary.mode) == ("examples/mlp.py:MLP", "virtual-cuda", "train")
    assert [graph.kind for graph in run.graphs] == ["forward", "backward"]
    # the same code path as `kernelscope compile examples/mlp.py:make --train`: the same run
    factory_run = kernelscope.api.recording.write_run(recordings.get("mlp", train=True), tmp_path / "factory")
    with factory_run.store:
        ours, theirs = run.dump(), factory_run.dump()
        assert ours["run"].pop("target") == "examples/mlp.py:MLP"
        assert theirs["run"].pop("target") == "examples/mlp.py:make"
        # Dynamo's tensor guards name each input's class and device: the factory ran as a program
        # on the virtual GPU, the held model on CPU tensors (recorder.py); everything else is equal
        ours_guards, theirs_guards = ours["run"].pop("guards"), theirs["run"].pop("guards")
        assert len(ours_guards) == len(theirs_guards)
        assert ours == theirs


@pytest.mark.slow
def test_query_a_recorded_model_as_the_cli_does(recorded_mlp, cli, monkeypatch):
    monkeypatch.chdir(REPO)
    gelu = next(number for number, text in enumerate((REPO / "examples/mlp.py").read_text().splitlines(), 1)
                if "F.gelu" in text)
    answer = recorded_mlp.query(f"examples/mlp.py:{gelu}")
    code, out, _ = cli("query", f"examples/mlp.py:{gelu}", "--store", str(recorded_mlp.store.path))
    assert code == 0 and str(answer) + "\n" == out
    assert any("gelu" in kernel for group in answer.groups for kernel in group.triton_kernels)
    assert str(recorded_mlp) + "\n" == cli("show", "--store", str(recorded_mlp.store.path))[1]
    page = recorded_mlp._repr_html_()
    assert f"<title>mlp.py:{gelu}  h = F.gelu(h)</title>" in page and "triton_per_fused_gelu" in page


def _rms_silu_inputs():
    return _load_example("function").make()


@pytest.mark.slow
def test_recording_a_block_and_a_decorated_function(tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(REPO)
    rms_silu, inputs = _rms_silu_inputs()
    with kernelscope.open(tmp_path / ".kernelscope", create=True) as store:
        with kernelscope.recording(store=store, target="virtual-cuda") as rec:
            torch.compile(rms_silu)(*inputs)
        run = rec.run
        assert run.target == "tests/api/test_api.py:test_recording_a_block_and_a_decorated_function"
        assert run.summary.mode == "inference" and store.latest == run
        assert any("rsqrt" in kernel.name for kernel in run.kernels)
        assert not run.query("examples/function.py:11").empty

        @kernelscope.recording(store=store, target="virtual-cuda")
        def step():
            return torch.compile(rms_silu)(*inputs)

        step()
        step_target = "tests/api/test_api.py:test_recording_a_block_and_a_decorated_function.<locals>.step"
        assert [other.target for other in store.runs] == [step_target, run.target]


def broken(x):
    doubled = x * 2
    return doubled.view(3, 7)  # BROKEN: 8 elements are not 3 x 7


BROKEN_LINE = next(number for number, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                   if text.rstrip().endswith("# BROKEN: 8 elements are not 3 x 7"))


@pytest.mark.slow
def test_a_model_that_raises_names_its_file_and_line_and_writes_no_run(tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(REPO)
    store = tmp_path / ".kernelscope"
    with pytest.raises(TargetError, match=rf"test_api\.py:{BROKEN_LINE}: the model raised \w+: .*"
                                          r"\(the last good run in the store is unchanged\)"):
        kernelscope.record(broken, torch.randn(8), target="virtual-cuda", store=store)
    assert not store.exists(), "nothing was written"
    with pytest.raises(TargetError, match=rf"test_api\.py:{BROKEN_LINE}: the model raised"):
        with kernelscope.recording(store=store, target="virtual-cuda") as rec:
            torch.compile(broken)(torch.randn(8))
    assert rec.run is None
    with pytest.raises(UserError, match=r"kernelscope.recording\(\) is recording \(tests/api/test_api.py:"
                                        r"test_a_model_that_raises\w+\): recordings do not nest"):
        with kernelscope.recording(store=store, target="virtual-cuda"):
            kernelscope.record(broken, torch.randn(8), target="virtual-cuda", store=store)
    with pytest.raises(CompileError, match="nothing was compiled with torch.compile inside kernelscope.recording()"):
        with kernelscope.recording(store=store, target="virtual-cuda"):
            broken(torch.randn(21))
    assert not store.exists()
