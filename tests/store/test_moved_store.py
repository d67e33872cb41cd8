"""A store answers wherever its workspace goes (issue 20): record in one folder, copy the
folder elsewhere (a CI artifact, a container mount, a colleague's clone) and ask from the
copy — from the CLI and, with a real recording, from the language server. A store whose
files were recorded elsewhere is pointed at them with --map-path; a file that cannot be
found says so and how to map it."""
from __future__ import annotations

import asyncio
import shutil
import sqlite3

import pytest
from synthetic_runs import GELU_LINE, LIBRARY_FILE, MLP_PATH, make_mlp_run

from kernelscope.cli import main as cli_main
from kernelscope.errors import StoreError
from kernelscope.store import StoreBackend
from kernelscope.store.places import PathMap


def record_synthetic(workspace) -> None:
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))


def cli(capsys, *args) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("original_kept", [True, False], ids=["copied", "moved"])
def test_a_copied_workspace_answers_from_its_own_store(tmp_path, monkeypatch, capsys, original_kept):
    recorded = tmp_path / "ci" / "proj"
    record_synthetic(recorded)
    copy = tmp_path / "laptop" / "proj"
    shutil.copytree(recorded, copy)
    if not original_kept:
        shutil.rmtree(recorded)

    monkeypatch.chdir(copy)
    code, out, err = cli(capsys, "query", f"{MLP_PATH}:{GELU_LINE}", "--detail")
    assert code == 0, err
    assert "gelu" in out and f"{MLP_PATH}:{GELU_LINE}" in out
    code, out, err = cli(capsys, "query", f"{copy / MLP_PATH}:{GELU_LINE}", "--direction", "down")
    assert code == 0, err
    with StoreBackend(copy / ".kernelscope", create=False) as store:
        location = store.locate(copy / MLP_PATH)
        assert location.absolute_path == str(copy / MLP_PATH)  # the copy's file, not the original's
        assert store.show().workspace == str(copy)
        assert not store.source_line(copy / MLP_PATH, GELU_LINE).empty


def test_the_store_alone_moved_still_reads_the_recorded_workspace(tmp_path, monkeypatch, capsys):
    workspace = tmp_path / "proj"
    record_synthetic(workspace)
    elsewhere = tmp_path / "archive" / "store"
    elsewhere.parent.mkdir()
    shutil.move(workspace / ".kernelscope", elsewhere)
    monkeypatch.chdir(workspace)
    code, out, err = cli(capsys, "query", f"{MLP_PATH}:{GELU_LINE}", "--store", str(elsewhere))
    assert code == 0, err
    with StoreBackend(elsewhere, create=False) as store:
        assert store.locate(workspace / MLP_PATH).absolute_path == str(workspace / MLP_PATH)


def test_map_path_points_a_store_at_files_recorded_elsewhere(tmp_path, monkeypatch, capsys):
    # Recorded with the store outside the workspace (--store elsewhere), then both moved apart.
    recorded_workspace = tmp_path / "job" / "repo"
    recorded_workspace.mkdir(parents=True)
    store_dir = tmp_path / "job-stores" / "run-7"
    with StoreBackend(store_dir) as store:
        store.write_run(make_mlp_run(recorded_workspace))
    mine = tmp_path / "me" / "repo"
    shutil.copytree(recorded_workspace, mine)
    shutil.rmtree(recorded_workspace)
    monkeypatch.chdir(mine)

    code, _, err = cli(capsys, "query", f"{MLP_PATH}:{GELU_LINE}", "--store", str(store_dir))
    assert code == 5
    assert f"recorded in {recorded_workspace}" in err and f"--map-path {recorded_workspace}=" in err
    assert err.count("\n") == 1

    mapping = f"{recorded_workspace}={mine}"
    code, out, err = cli(capsys, "query", f"{MLP_PATH}:{GELU_LINE}", "--store", str(store_dir), "--map-path", mapping)
    assert code == 0, err
    monkeypatch.setenv("KERNELSCOPE_MAP_PATH", mapping)
    with StoreBackend(store_dir, create=False) as store:
        assert store.locate(MLP_PATH, 1).absolute_path == str(mine / MLP_PATH)


def test_map_path_maps_absolute_library_files(tmp_path):
    record_synthetic(tmp_path / "ws")
    local_site = tmp_path / "venv-here"
    recorded_site = LIBRARY_FILE.rsplit("/torch/", 1)[0]
    mapped = StoreBackend(tmp_path / "ws" / ".kernelscope", create=False,
                   path_map=PathMap.parse([f"{recorded_site}={local_site}"]))
    with mapped:
        local_file = local_site / "torch/nn/modules/linear.py"
        location = mapped.locate(local_file)  # the user's path maps back to the recorded key
        assert location.path == LIBRARY_FILE
        assert location.absolute_path == str(local_file)


def test_a_store_written_before_the_relative_workspace_moves_too(tmp_path, monkeypatch, capsys):
    """Older stores recorded only the absolute workspace: the folder holding the store stands in."""
    recorded = tmp_path / "old" / "proj"
    record_synthetic(recorded)
    conn = sqlite3.connect(recorded / ".kernelscope" / "kernelscope.sqlite")
    conn.execute("UPDATE runs SET workspace_from_store = NULL")
    conn.commit()
    conn.close()
    copy = tmp_path / "new" / "proj"
    shutil.copytree(recorded, copy)
    shutil.rmtree(recorded)
    monkeypatch.chdir(copy)
    code, out, err = cli(capsys, "query", f"{copy / MLP_PATH}:{GELU_LINE}")
    assert code == 0, err


@pytest.mark.parametrize("text", ["no-equals", "=/x", "/x=", ""])
def test_malformed_map_path_is_one_clear_error(tmp_path, monkeypatch, capsys, text):
    record_synthetic(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "runs", "--map-path", text)
    assert code == 5 and "--map-path" in err and "RECORDED=LOCAL" in err and err.count("\n") == 1
    with pytest.raises(StoreError, match="RECORDED=LOCAL"):
        PathMap.parse([text])


def test_path_map_longest_prefix_wins_both_ways():
    path_map = PathMap.parse(["/a=/x", "/a/b=/y"])
    assert path_map.to_local("/a/b/c.py") == "/y/c.py"
    assert path_map.to_local("/a/c.py") == "/x/c.py"
    assert path_map.to_local("/ab/c.py") is None  # a prefix is a whole path component
    assert path_map.to_recorded("/y/c.py") == "/a/b/c.py"
    assert path_map.to_recorded("/x") == "/a"


# -- a real recording, asked from a copy by the language server ------------------------------


@pytest.mark.slow
async def test_language_server_answers_from_a_copied_workspace(tmp_path, run_cli):
    from lsp_support import REPO, line_of, start_session, uri

    recorded = tmp_path / "recorded"
    (recorded / "examples").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "mlp.py", recorded / "examples" / "mlp.py")
    done = run_cli(["compile", "examples/mlp.py:make"], cwd=recorded)
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "unpacked" / "copy"
    shutil.copytree(recorded, copy)
    shutil.rmtree(recorded)  # another machine: the recording folder is not there

    query = run_cli(["query", "examples/mlp.py:21", "--json"], cwd=copy)
    assert query.returncode == 0, query.stderr
    model = copy / "examples" / "mlp.py"
    gelu = line_of(model, "F.gelu(")
    session = await start_session(copy, {"deviceTarget": "virtual-cuda"})
    try:
        session.open(model)
        hover = await session.hover(model, gelu)
        assert hover is not None and "gelu" in hover.contents.value
        targets = await session.definition(model, gelu)
        assert targets, "definition answered nothing from the copy"
        for target in targets:
            assert target.uri.startswith(uri(copy / ".kernelscope" / "runs")), target.uri
    finally:
        await session.stop()


async def test_language_server_says_how_to_map_a_store_recorded_elsewhere(tmp_path):
    """A store outside its workspace, then the workspace moved: the server says once how to
    map it (not null on every line without a word), and with pathMap it answers."""
    from lsp_support import line_of, start_session

    recorded = tmp_path / "job" / "repo"
    store_dir = tmp_path / "stores" / "run-7"
    with StoreBackend(store_dir) as store:
        store.write_run(make_mlp_run(recorded))
    here = tmp_path / "me" / "repo"
    shutil.copytree(recorded, here)
    shutil.rmtree(recorded)
    model = here / MLP_PATH
    gelu = line_of(model, "gelu(h)")

    session = await start_session(here, {"store": str(store_dir)})
    try:
        session.open(model)
        assert await session.hover(model, gelu) is None
        for _ in range(100):
            shown = [m.message for m in session.client.messages if "pathMap" in m.message]
            if shown:
                break
            await asyncio.sleep(0.05)
        assert len(shown) == 1 and str(recorded) in shown[0] and str(here) in shown[0], session.client.messages
    finally:
        await session.stop()

    session = await start_session(here, {"store": str(store_dir), "pathMap": {str(recorded): str(here)}})
    try:
        session.open(model)
        hover = await session.hover(model, gelu)
        assert hover is not None and "gelu" in hover.contents.value
        assert not [m for m in session.client.messages if "pathMap" in m.message]
    finally:
        await session.stop()
