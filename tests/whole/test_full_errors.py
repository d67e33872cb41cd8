"""Internal errors can be seen (issue 20): every one-line error says how to get the full
one; `--traceback` (CLI) and KERNELSCOPE_TRACEBACK=1 (language server, TUI, watch, any
command) show the chain behind it — an Inductor failure's own exception included."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from kernelscope.cli import main as cli_main
from kernelscope.errors import INTERNAL_EXIT_CODE

HINT = "(--traceback shows the full error)"

# A model whose import breaks Inductor's lowering of erf (as a torch bug would): the compile
# fails inside Inductor with the RuntimeError below as the cause.
BROKEN_INDUCTOR = '''\
import torch
import torch.nn.functional as F
from torch._inductor import lowering


def _no_erf(*args, **kwargs):
    raise RuntimeError("no lowering for erf today")


lowering.lowerings[torch.ops.aten.erf.default] = _no_erf


def forward(x):
    return F.gelu(x) * 2


def make():
    return forward, (torch.randn(8, 8),)
'''


def cli(capsys, *args) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def damaged_store(tmp_path) -> Path:
    root = tmp_path / ".kernelscope"
    root.mkdir()
    (root / "kernelscope.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)
    return root


def test_one_line_error_names_the_way_to_the_full_one(damaged_store, capsys, monkeypatch):
    monkeypatch.delenv("KERNELSCOPE_TRACEBACK", raising=False)
    code, out, err = cli(capsys, "runs", "--store", str(damaged_store))
    assert code == 5 and out == ""
    assert err.count("\n") == 1 and err.startswith("kernelscope: error: ") and err.rstrip().endswith(HINT)
    assert "Traceback" not in err


@pytest.mark.parametrize("how", ["flag-first", "flag-last", "environment"])
def test_traceback_shows_the_chain(damaged_store, capsys, monkeypatch, how):
    monkeypatch.delenv("KERNELSCOPE_TRACEBACK", raising=False)
    args = ["runs", "--store", str(damaged_store)]
    if how == "flag-first":
        args = ["--traceback", *args]
    elif how == "flag-last":
        args = [*args, "--traceback"]
    else:
        monkeypatch.setenv("KERNELSCOPE_TRACEBACK", "1")
    code, _, err = cli(capsys, *args)
    assert code == 5
    assert "Traceback (most recent call last)" in err
    assert "sqlite3.DatabaseError" in err  # the cause, not only our message
    assert "The above exception was the direct cause" in err
    assert err.rstrip().splitlines()[-1].startswith("kernelscope: error: ")  # the one line comes last
    assert HINT not in err
    if how != "environment":  # the flag is for that command only
        assert "KERNELSCOPE_TRACEBACK" not in os.environ


def test_the_cli_and_the_store_name_the_same_map_path_variable():
    from kernelscope import cli
    from kernelscope.store import places

    assert cli.MAP_PATH_ENV == places.MAP_PATH_ENV


def test_an_internal_error_is_one_line_with_its_own_exit_code(tmp_path, capsys, monkeypatch):
    from kernelscope.cli import runs_cmd

    def broken(args):
        raise KeyError("a kernelscope bug")

    monkeypatch.delenv("KERNELSCOPE_TRACEBACK", raising=False)
    monkeypatch.setattr(runs_cmd, "run", broken)
    code, _, err = cli(capsys, "runs", "--store", str(tmp_path))
    assert code == INTERNAL_EXIT_CODE
    assert err.count("\n") == 1 and "internal error: KeyError" in err and HINT in err
    code, _, err = cli(capsys, "--traceback", "runs", "--store", str(tmp_path))
    assert code == INTERNAL_EXIT_CODE and "Traceback" in err and "in broken" in err


@pytest.mark.slow
def test_an_inductor_failure_shows_inductors_own_exception_on_request(tmp_path, run_cli):
    model = tmp_path / "model.py"
    model.write_text(BROKEN_INDUCTOR)
    args = ["compile", f"{model}:make", "--store", str(tmp_path / "store"), "--target", "cpu-triton"]
    plain = run_cli(args, env_extra={"KERNELSCOPE_TRACEBACK": ""})
    assert plain.returncode == 4, plain.stderr
    errors = [line for line in plain.stderr.splitlines() if line.startswith("kernelscope: error:")]
    assert len(errors) == 1 and "Inductor failed" in errors[0] and errors[0].endswith(HINT)
    assert "Traceback" not in plain.stderr

    full = run_cli(["--traceback", *args], env_extra={"KERNELSCOPE_TRACEBACK": ""})
    assert full.returncode == 4
    assert "Traceback (most recent call last)" in full.stderr
    assert "RuntimeError: no lowering for erf today" in full.stderr  # Inductor's chain, down to the cause
    assert f'File "{model}", line 7, in _no_erf' in full.stderr


@pytest.mark.slow
async def test_language_server_logs_the_full_compile_error_with_the_variable(tmp_path, monkeypatch):
    from lsp_support import start_session

    model = tmp_path / "model.py"
    model.write_text(BROKEN_INDUCTOR)
    for wanted in (False, True):
        monkeypatch.setenv("KERNELSCOPE_TRACEBACK", "1" if wanted else "0")
        session = await start_session(tmp_path, {"store": str(tmp_path / "store"), "deviceTarget": "cpu-triton"})
        try:
            with pytest.raises(JsonRpcException, match="Inductor failed"):
                await session.command("kernelscope.compile", {"target": f"{model}:make"})
            await asyncio.sleep(0.2)
            shown = [m.message for m in session.client.messages if m.type == types.MessageType.Error]
            logged = "\n".join(m.message for m in session.client.log_messages)
            assert any("compile failed" in message for message in shown), shown
            if wanted:
                assert "RuntimeError: no lowering for erf today" in logged and "Traceback" in logged
                assert any("full error in the log" in message for message in shown)
            else:
                assert "Traceback" not in logged
                assert any("KERNELSCOPE_TRACEBACK=1" in message for message in shown)
        finally:
            await session.stop()


@pytest.mark.parametrize("wanted", [False, True])
def test_the_tui_keeps_the_full_error_for_after_the_screen(tmp_path, monkeypatch, wanted):
    from synthetic_runs import make_mlp_run
    from tui_support import SIZE, settle

    from kernelscope.store import StoreBackend
    from kernelscope.tui.app import KernelscopeApp
    from kernelscope.watch.events import BuildFailed

    monkeypatch.setenv("KERNELSCOPE_TRACEBACK", "1" if wanted else "")
    monkeypatch.chdir(tmp_path)  # the TUI opens the run's files from where it is started
    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(make_mlp_run(tmp_path))
    chain = "Traceback (most recent call last):\n  ...\nRuntimeError: no lowering for erf today\n"

    async def scenario():
        app = KernelscopeApp(tmp_path / ".kernelscope", run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.run_id == 1 and app.facts_loaded)
            app.post_message(app.CompileEvent(BuildFailed(2, "compile", "Inductor failed", last_good_run=1,
                                                          traceback=chain)))
            await settle(pilot, lambda: "failed" in app.status.error)
            return app.status.error, list(app.full_errors)

    error, kept = asyncio.run(scenario())
    assert "Traceback" not in error and "Inductor failed" in error
    if wanted:
        assert kept and "no lowering for erf today" in kept[0]
    else:
        assert kept == [] and "KERNELSCOPE_TRACEBACK=1" in error
