"""The read-side CLI: runs, show, query, dump, validate — output, exit codes, errors, import boundary."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO
from synthetic_runs import GELU_LINE, make_mlp_run, mlp_store, workspace  # noqa: F401  (fixtures)

import kernelscope.cli
from kernelscope.cli import common as cli_common
from kernelscope.cli.common import format_time

READ_COMMANDS = ["runs", "show", "query", "dump", "validate"]
FW = "runs/1/graphs/0_0_0-forward"


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `kernelscope ARGS...` in-process through the real dispatcher; return (exit code, stdout, stderr).

    Only the read-side subcommands are registered: compile/run belong to the engine.
    """
    monkeypatch.setattr(kernelscope.cli, "SUBCOMMANDS", READ_COMMANDS)

    def run(*argv: str) -> tuple[int, str, str]:
        code = kernelscope.cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_runs_lists_runs_newest_first(mlp_store, workspace, cli):
    mlp_store.write_run(make_mlp_run(workspace, created=1_763_900_000.0))
    code, out, _ = cli("runs")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "created", "target", "device", "mode", "graphs", "kernels", "kernel", "lines",
                                "wrapper", "lines"]
    assert lines[1].split() == ["2", *format_time(1_763_900_000.0).split(), "examples/mlp.py:make", "virtual-cuda",
                                "train", "2", "5", "93.8%", "(15/16)", "91.7%", "(11/12)"]
    assert lines[2].split()[0] == "1" and len(lines) == 3


def test_runs_json(mlp_store, cli):
    code, out, _ = cli("runs", "--json")
    [run] = json.loads(out)
    assert code == 0
    assert (run["id"], run["target"], run["graph_count"], run["kernel_count"]) == (1, "examples/mlp.py:make", 2, 5)
    assert run["coverage"]["kernel_lines"] == {"covered": 15, "total": 16, "share": 0.9375}


def test_runs_with_an_empty_store(workspace, cli):
    from kernelscope.store import StoreBackend

    StoreBackend(workspace / ".kernelscope").close()
    assert cli("runs") == (0, "no runs yet — record one with `kernelscope compile FILE.py:FACTORY`\n", "")


def test_show_prints_graphs_kernels_breaks_coverage(mlp_store, cli):
    code, out, _ = cli("show")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "run 1  examples/mlp.py:make"
    assert ("  0/0         forward   6               15               3        "
            "runs/1/graphs/0_0_0-forward/wrapper.py") in lines
    assert ("  0/0         backward  0               13               2        "
            "runs/1/graphs/0_0_0-backward/wrapper.py") in lines
    assert ("  0_0_0-forward   triton_poi_fused_gelu_0                triton  5      "
            f"{FW}/kernels/triton_poi_fused_gelu_0.py") in lines
    assert "  [0/0] examples/mlp.py:18: torch.randn outside the compiled region" in lines
    assert "  [0/1] tensor 'L['x']' size mismatch at index 0. expected 8, actual 16" in lines
    assert "  kernel lines with nodes:         93.8% (15/16)" in lines
    assert "  backward nodes with source:      85.7% (6/7)" in lines
    assert "  kernels agreeing with Inductor:  100.0% (1/1), 1 without Inductor mapping" in lines
    assert "  FX graph cache bypassed for recorded graphs" in lines
    assert "  compile_s:           2.500 s" in lines


def test_show_json_and_unknown_run(mlp_store, cli):
    code, out, _ = cli("show", "1", "--json")
    data = json.loads(out)
    assert code == 0
    assert [graph["kind"] for graph in data["graphs"]] == ["forward", "backward"]
    assert data["graph_breaks"][0]["line"] == 18
    assert data["summary"]["coverage"]["wrapper_lines"]["covered"] == 11
    assert cli("show", "7") == (5, "", "kernelscope: error: there is no run 7 in this store — "
                                       "`kernelscope runs` lists the runs (--traceback shows the full error)\n")


def test_query_prints_the_chain_as_plain_text_when_not_a_tty(mlp_store, cli):
    code, out, _ = cli("query", f"examples/mlp.py:{GELU_LINE}", "--direction", "down", "--detail")
    assert code == 0
    lines = out.splitlines()
    assert lines[:4] == [
        "examples/mlp.py:13  (source file in run 1)",
        "  | h = torch.nn.functional.gelu(h)",
        "  graph 0/0 forward",
        f"    pre-grad h_1 = torch._C._nn.gelu  [stack_trace]  {FW}/pre_grad.py:5",
    ]
    assert (f"    kernel triton_poi_fused_gelu_0 (triton)  [fused into triton kernel: add, erf, mul, mul_1, mul_2]  "
            f"{FW}/kernels/triton_poi_fused_gelu_0.py") in lines
    assert f"      {FW}/kernels/triton_poi_fused_gelu_0.py:17  [computes erf]  | tmp5 = libdevice.erf(tmp4)" in lines
    assert (f"      {FW}/wrapper.py:11  [launches kernel]  "
            "| triton_poi_fused_gelu_0.run(buf0, buf1, 512, stream=stream0)") in lines
    assert "  graph 0/0 backward" in lines
    assert not any("source lines (up)" in line for line in lines)
    assert "\x1b[" not in out


def test_query_of_a_source_line_leads_with_a_summary(mlp_store, cli):
    code, out, _ = cli("query", f"examples/mlp.py:{GELU_LINE}")
    assert code == 0
    assert out.splitlines()[2:7] == [
        "  graph 0/0 forward: 5 post-grad nodes · 1 Triton kernels · 0 extern calls · 9 generated lines",
        "    (top level: no submodule)  direct: 1 Triton, 0 extern, 9 generated lines, 5 post-grad nodes",
        "      source lines: examples/mlp.py:13",
        "      Triton: triton_poi_fused_gelu_0",
        "  graph 0/0 backward: 4 post-grad nodes · 1 Triton kernels · 0 extern calls · 9 generated lines",
    ]
    assert out.splitlines()[-1].startswith("  --detail lists every node")


def test_query_up_from_a_kernel_line(mlp_store, cli):
    code, out, _ = cli("query", f".kernelscope/{FW}/kernels/triton_poi_fused_gelu_0.py:17", "--direction", "up")
    assert code == 0
    lines = out.splitlines()
    assert lines[2] == "  recorded: computes erf"
    assert "      examples/mlp.py:13 in forward  <- h_1, erf  [stack_trace]" in lines
    assert f"    post-grad erf = aten.erf.default  [computes]  {FW}/post_grad.py:7" in lines


def test_query_uses_a_rich_tree_on_a_tty(mlp_store, cli, monkeypatch):
    monkeypatch.setattr(cli_common, "stdout_is_tty", lambda: True)
    code, out, _ = cli("query", "examples/mlp.py:12")
    assert code == 0
    assert "├── graph 0/0 forward" in out or "└── graph 0/0 forward" in out


def test_query_json(mlp_store, cli):
    code, out, _ = cli("query", "examples/mlp.py:12", "--json", "--run", "1")
    data = json.loads(out)
    assert code == 0
    assert data["location"]["path"] == "examples/mlp.py"
    assert [node["name"] for node in data["graphs"][0]["post_nodes"]] == ["permute", "addmm"]


def test_query_on_a_line_with_no_links_says_which_lines_have_them(mlp_store, cli):
    code, out, _ = cli("query", "examples/mlp.py:5")
    assert code == 0
    assert out.splitlines()[-1] == "  nothing recorded at this line in run 1 (lines with links in this file: 12-14, 18)"


@pytest.mark.parametrize("argv, code, message", [
    (["query", "examples/mlp.py"], 2,
     "expected FILE:LINE with a line number from 1 (e.g. examples/mlp.py:14), got 'examples/mlp.py'"),
    (["query", "examples/mlp.py:0"], 2, "expected FILE:LINE with a line number from 1"),
    (["query", "examples/mlp.py:40"], 2, "line 40 is out of range for examples/mlp.py: give a line 1-18"),
    (["query", "examples/nothing.py:3"], 5,
     "no run has recorded examples/nothing.py — run `kernelscope compile examples/nothing.py:FACTORY`"),
    (["query", "examples/mlp.py:13", "--run", "4"], 5, "there is no run 4 in this store"),
    (["dump", "--run", "4"], 5, "there is no run 4 in this store"),
])
def test_errors_are_one_line_saying_what_to_do(mlp_store, cli, argv, code, message):
    exit_code, out, err = cli(*argv)
    assert (exit_code, out) == (code, "")
    assert err.startswith("kernelscope: error: " + message) and err.count("\n") == 1


def test_missing_store(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("runs")
    assert code == 5
    assert err == (f"kernelscope: error: no kernelscope store at {tmp_path / '.kernelscope'} — run "
                   "`kernelscope compile FILE.py:FACTORY` first, or pass --store DIR "
                   "(--traceback shows the full error)\n")
    assert not (tmp_path / ".kernelscope").exists()  # reading never creates a store


def test_store_option_points_anywhere(mlp_store, workspace, tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("runs", "--json", "--store", str(workspace / ".kernelscope"))
    assert code == 0 and json.loads(out)[0]["id"] == 1


def test_dump_to_stdout_and_file_then_validate(mlp_store, workspace, cli):
    code, out, _ = cli("dump")
    assert code == 0 and json.loads(out) == mlp_store.dump(1)
    assert cli("dump", "--run", "1", "-o", "run.json") == (0, "", "")
    assert (workspace / "run.json").read_text() == out
    assert cli("validate", "run.json") == (0, "run.json: valid kernelscope dump (schema 7.0)\n", "")


def test_validate_reports_problem_paths(mlp_store, workspace, cli):
    data = mlp_store.dump(1)
    data["run"]["graphs"][0]["kind"] = "sideways"
    del data["run"]["target"]
    (workspace / "broken.json").write_text(json.dumps(data))
    code, out, _ = cli("validate", "broken.json")
    assert code == 1
    assert out.splitlines() == [
        "broken.json: $.run: 'target' is a required property",
        "broken.json: $.run.graphs[0].kind: 'sideways' is not one of ['forward', 'backward', 'inference']",
        "broken.json: 2 problems",
    ]
    (workspace / "nonsense.json").write_text("{not json")
    assert cli("validate", "nonsense.json") == (
        1, "nonsense.json: not JSON: line 1 column 2: Expecting property name enclosed in double quotes\n", "")
    assert cli("validate", "missing.json") == (
        2, "", "kernelscope: error: cannot read missing.json: No such file or directory "
               "(--traceback shows the full error)\n")


def test_every_read_command_help_ends_with_examples(monkeypatch):
    monkeypatch.setattr(kernelscope.cli, "SUBCOMMANDS", READ_COMMANDS)
    parser = kernelscope.cli.build_parser()
    [subparsers] = [action for action in parser._actions if action.dest == "command"]
    for name in READ_COMMANDS:
        help_lines = subparsers.choices[name].format_help().rstrip().splitlines()
        examples_at = help_lines.index("examples:")
        assert help_lines[examples_at + 1:], name
        assert all(line.startswith("  kernelscope ") for line in help_lines[examples_at + 1:]), name


def test_store_and_cli_read_side_never_import_torch():
    code = (
        "import importlib, sys\n"
        "import kernelscope.store, kernelscope.cli\n"
        f"for name in {READ_COMMANDS!r} + ['diff', 'import', 'watch']:\n"
        "    importlib.import_module(f'kernelscope.cli.{name}_cmd')\n"
        "import kernelscope.diff, kernelscope.trace_import, kernelscope.watch.session\n"
        "import kernelscope.watch.worker_client\n"
        "import kernelscope.cli.asm_query, kernelscope.cli.asm_ask, kernelscope.asm.assemble, kernelscope.asm.text\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'jsonschema')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=True)
    assert result.stdout.strip() == "[]"
