"""Stores that arrive from elsewhere (issue 30): a crafted store's generated-file path that
leaves the store (`..`, absolute, a symlink out) is named by `doctor` and never opened by
any command or front end; a row holding a value kernelscope never writes is one clear
store error, not an internal error. An audit hook on `open` proves nothing outside was
read. (The fuzzing campaign's `crafted_store` target tries many more such stores.)"""
from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest
from synthetic_runs import MLP_PATH, make_mlp_run

from kernelscope.cli import main as cli_main
from kernelscope.errors import StoreError
from kernelscope.store import StoreBackend, paths

KERNEL = "runs/1/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py"
WRAPPER = "runs/1/graphs/0_0_0-forward/wrapper.py"


class Opened:
    """Every path this process opens while `watching` (sys.addaudithook cannot be removed:
    installed once, it records only while switched on)."""

    installed = False
    watching = False
    paths: list[str] = []

    @classmethod
    def hook(cls, event, args):
        if cls.watching and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            cls.paths.append(os.fsdecode(args[0]))

    def __enter__(self):
        if not Opened.installed:
            sys.addaudithook(Opened.hook)
            Opened.installed = True
        Opened.paths, Opened.watching = [], True
        return self

    def __exit__(self, *exc):
        Opened.watching = False

    def under(self, directory: Path) -> list[str]:
        return [path for path in Opened.paths if str(directory) in os.path.abspath(path)]


@pytest.fixture
def crafted(tmp_path, monkeypatch):
    """A workspace whose store's kernel row names `../../elsewhere/secret.py`, beside a
    directory `elsewhere/` holding that secret."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.py").write_text("TOKEN = 'do not read'\n")
    return workspace, elsewhere


def set_path(workspace: Path, old: str, new: str) -> None:
    conn = sqlite3.connect(workspace / ".kernelscope" / "kernelscope.sqlite", isolation_level=None)
    conn.execute("UPDATE files SET path = ? WHERE path = ?", (new, old))
    conn.execute("UPDATE generated_lines SET file = ? WHERE file = ?", (new, old))
    conn.close()


def cli(capsys, *args) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("escape", ["../../elsewhere/secret.py", "runs/1/../../../elsewhere/secret.py", "ABSOLUTE"])
def test_a_generated_path_out_of_the_store_is_named_by_doctor_and_never_read(crafted, capsys, escape):
    workspace, elsewhere = crafted
    escape = str(elsewhere / "secret.py") if escape == "ABSOLUTE" else escape
    set_path(workspace, KERNEL, escape)
    with Opened() as opened:
        code, out, _ = cli(capsys, "doctor")
        assert code != 0 and "leaves the store" in out and repr(escape) in out
        # every reader of the run: none opens the file the row names
        code, _, err = cli(capsys, "query", escape + ":3")
        assert code != 0
        for args in (["query", f"{MLP_PATH}:13"], ["show", "1"], ["dump"], ["diff", "1", "1"], ["runs"]):
            cli(capsys, *args)
        code, _, err = cli(capsys, "merge", str(workspace / ".kernelscope"), "--store", str(workspace / "merged"))
        assert code == 5 and "not merged" in err and "leads out" not in err
    assert opened.under(elsewhere) == [], opened.under(elsewhere)


def test_a_symlink_out_of_the_store_is_named_and_not_followed(crafted, capsys):
    workspace, elsewhere = crafted
    kernel = workspace / ".kernelscope" / KERNEL
    kernel.unlink()
    kernel.symlink_to(elsewhere / "secret.py")
    with Opened() as opened:
        code, out, _ = cli(capsys, "doctor")
        assert code != 0 and "resolves outside the store" in out
        code, _, err = cli(capsys, "query", f".kernelscope/{KERNEL}:3")
        assert code == 5 and "resolves outside the store" in err
        cli(capsys, "dump")
        code, _, err = cli(capsys, "merge", str(workspace / ".kernelscope"), "--store", str(workspace / "merged"))
        assert code == 5 and "not merged" in err
    assert opened.under(elsewhere) == []


def test_the_language_server_links_and_opens_nothing_out_of_the_store(crafted):
    from pygls.uris import from_fs_path

    from kernelscope.lsp.provenance import Provenance

    workspace, elsewhere = crafted
    escape = "runs/1/../../../elsewhere/secret.py"
    set_path(workspace, KERNEL, escape)
    provenance = Provenance(workspace, workspace / ".kernelscope")
    with Opened() as opened:
        with pytest.raises(StoreError, match="climbs out"):
            provenance.uri_for(escape)
        assert provenance.document(from_fs_path(str(elsewhere / "secret.py"))) is None
        document = provenance.document(from_fs_path(str(workspace / MLP_PATH)))
        assert document is not None
        provenance.query(document, 13, "both")  # the model line still answers
    assert opened.under(elsewhere) == []


def test_why_outside_accepts_only_store_relative_paths(tmp_path):
    (tmp_path / "runs" / "1").mkdir(parents=True)
    (tmp_path / "runs" / "1" / "out").symlink_to(tmp_path.parent)
    assert paths.why_outside(tmp_path, "runs/1/graphs/0/wrapper.py") is None
    assert paths.why_outside(tmp_path, "runs/1/../1/x.py") == "climbs out with '..'"
    assert paths.why_outside(tmp_path, "/etc/passwd") == "is absolute"
    assert paths.why_outside(tmp_path, "C:/x.py") == "is absolute"
    assert paths.why_outside(tmp_path, "runs/1/a\x00b") == "is empty or holds a NUL character"
    assert paths.why_outside(tmp_path, "runs/1/out/secret").startswith("resolves outside the store")


@pytest.mark.parametrize("table, column, value", [
    ("runs", "config_json", "{not json"),
    ("runs", "coverage_json", "null"),
    ("generated_lines", "line", "abc"),
    ("nodes", "source_line", 2 ** 62),
])
def test_a_value_kernelscope_never_writes_is_a_store_error(crafted, capsys, table, column, value):
    workspace, _ = crafted
    conn = sqlite3.connect(workspace / ".kernelscope" / "kernelscope.sqlite", isolation_level=None)
    conn.execute(f"UPDATE {table} SET {column} = ?", (value,))
    conn.close()
    failures = 0
    for args in (["runs"], ["show", "1"], ["dump"], ["diff", "1", "1"], ["query", f"{MLP_PATH}:13"],
                 ["query", f".kernelscope/{WRAPPER}:5"]):
        code, _, err = cli(capsys, *args)
        assert code in (0, 1, 5) and "internal error" not in err, (args, err)
        if code == 5:
            failures += 1
            assert "values kernelscope never writes" in err and f"{table}.{column}" in err, err
    code, out, _ = cli(capsys, "doctor")
    assert code != 0 and f"{table}.{column}" in out
