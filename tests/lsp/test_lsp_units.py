"""Unit tests of the language server's pure parts: content-matched line maps,
target discovery (never executing the file), options, and hover rendering caps."""
from __future__ import annotations

import pytest

from kernelscope.lsp.options import OptionsError, ServerOptions
from kernelscope.lsp.positions import build_line_map
from kernelscope.lsp.targets import TargetNotFound, find_factory, resolve_target


def test_unchanged_file_maps_every_line_to_itself():
    line_map = build_line_map({2: "b = 2", 3: "c = 3"}, ["a = 1", "b = 2", "c = 3"])
    assert not line_map.stale and line_map.recorded_line(5) == 5 and line_map.current_line(2) == 2


def test_moved_lines_follow_their_content_and_changed_ones_are_lost():
    recorded = {1: "h = fc1(x)", 2: "h = gelu(h)", 3: "h = norm(h)", 4: "return h"}
    current = ["# new", "# lines", "h = fc1(x)", "h = relu(h)", "h = norm(h)", "return h"]
    line_map = build_line_map(recorded, current)
    assert line_map.stale
    assert line_map.current_line(1) == 3 and line_map.current_line(3) == 5 and line_map.current_line(4) == 6
    assert line_map.current_line(2) is None and line_map.lost == [2]
    assert line_map.recorded_line(4) is None  # the edited line answers nothing
    assert line_map.recorded_line(5) == 3


def test_duplicate_lines_pick_the_copy_nearest_to_where_the_others_moved():
    recorded = {2: "x = block(x)", 3: "x = block(x)", 5: "return x"}
    current = ["", "", "", "x = block(x)", "x = block(x)", "", "return x"]
    line_map = build_line_map(recorded, current)
    assert line_map.current_line(5) == 7
    assert {line_map.current_line(2), line_map.current_line(3)} == {4, 5}


def test_factory_found_by_parsing_without_running(tmp_path):
    text = "import sys\nsys.exit(3)\n\ndef helper(x):\n    pass\n\ndef make(dim=4):\n    return None\n"
    assert find_factory(text) == "make"
    assert find_factory("def make(x):\n    pass\n") is None  # needs an argument
    assert find_factory("def make_model():\n    pass\n") == "make_model"
    assert find_factory("def make(:\n") is None


def test_target_precedence_and_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kernelscope]\ntarget = "mlp"\ndevice = "cpu-triton"\ntrain = true\n'
        '[tool.kernelscope.targets]\nmlp = "m.py:make"\nother = "o.py:build"\n')
    options = ServerOptions()
    target = resolve_target(tmp_path, options)
    assert (target.spec, target.device, target.train) == ("m.py:make", "cpu-triton", True)
    assert resolve_target(tmp_path, options, requested="other").spec == "o.py:build"
    given = ServerOptions.from_dict({"deviceTarget": "virtual-cuda", "train": False})
    target = resolve_target(tmp_path, given)
    assert (target.device, target.train) == ("virtual-cuda", False)  # the client's choice wins
    with pytest.raises(TargetNotFound, match="neither PATH.py:FACTORY nor a named target"):
        resolve_target(tmp_path, options, requested="nope")


def test_target_from_the_current_file_when_nothing_is_configured(tmp_path):
    model = tmp_path / "model.py"
    model.write_text("def make():\n    pass\n")
    assert resolve_target(tmp_path, ServerOptions(), current_file=model).spec == f"{model}:make"
    with pytest.raises(TargetNotFound, match="nothing to compile"):
        resolve_target(tmp_path, ServerOptions(), current_file=model, current_text="x = 1\n")


def test_options_are_checked_and_remember_what_was_given():
    options = ServerOptions.from_dict({"compileTimeout": 5, "inlayHints": False})
    assert options.compile_timeout == 5.0 and not options.inlay_hints
    assert options.given == {"compile_timeout", "inlay_hints"}
    for bad in ({"compileTimeout": -1}, {"deviceTarget": "tpu"}, {"train": "yes"}, {"store": ""}):
        with pytest.raises(OptionsError):
            ServerOptions.from_dict(bad)
    with pytest.raises(OptionsError):
        ServerOptions.from_dict([1, 2])


def test_trust_defaults_on_and_once_off_stays_off():
    assert ServerOptions().trusted  # editors without workspace trust start the server themselves
    untrusted = ServerOptions.from_dict({"trusted": False})
    assert not untrusted.trusted
    assert not ServerOptions.from_dict({"trusted": True}, untrusted).trusted
    with pytest.raises(OptionsError):
        ServerOptions.from_dict({"trusted": "no"})


def test_hover_on_a_big_answer_stays_short():
    from kernelscope.lsp import render
    from kernelscope.store.reading.graphs_and_kernels import GraphInfo, KernelInfo
    from kernelscope.store.reading.source_index import GraphHit, KernelHit, LineAnswer

    answer = LineAnswer(run_id=1, path="model.py", line=7)
    for graph_id in range(6):
        info = GraphInfo(graph_id, f"{graph_id}_0_0-forward", f"{graph_id}/0", "forward", {"wrapper": "w.py"})
        graph = GraphHit(info, post_nodes=96, module_class={f"blocks.{n}.mlp": "x.MLP" for n in range(12)})
        for layer in range(12):
            for index in range(8):
                kernel = KernelInfo(layer * 8 + index, f"triton_poi_fused_gelu_{layer}_{index}", "triton",
                                    f"runs/1/k{layer}_{index}.py", graph_id, info.key, info.compile_id, "forward")
                graph.kernels.append(KernelHit(kernel, lines=[40, 41, 42, 50], first_value=41,
                                               modules={f"blocks.{layer}.mlp"}))
        answer.graphs.append(graph)
    text = render.source_hover(answer, "x = gelu(x)", None, None, lambda path, line: f"file:///{path}#L{line}", None)
    assert "**forward [0/0]** — 96 kernels" in text
    assert "`blocks.0.mlp` (MLP): 8 kernels" in text and "… 5 more" in text  # 3 kernels shown per instance
    assert "… 10 more module instances (80 kernels)" in text  # 2 instances shown per graph
    assert "(L40-42, L50)" in text and "k0_0.py#L41" in text
    assert "… 2 more graphs (192 kernels)" in text
    assert len(text.splitlines()) < 60
