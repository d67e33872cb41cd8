"""Store faults (issue 20): a corrupt or foreign SQLite file, a store of a newer or older
schema, a read-only store folder, a missing or edited generated file, a full disk during
a write, half-written leftovers. Each gives one clear message; `kernelscope doctor`
reports it and `--repair` repairs what can be repaired without touching good runs.

The read-only folder and the full disk are real: a read-only bind mount and a small
tmpfs, each in a private mount namespace (`unshare -m`) of a subprocess; those tests are
skipped where mounting is not allowed."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO
from synthetic_runs import GELU_LINE, MLP_PATH, make_mlp_run

from kernelscope.cli import main as cli_main
from kernelscope.store import StoreBackend
from kernelscope.store.health import integrity

KERNEL = "runs/{run}/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py"
WRAPPER = "runs/{run}/graphs/0_0_0-forward/wrapper.py"


def cli(capsys, *args) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def two_runs(tmp_path, monkeypatch) -> Path:
    """A workspace (the cwd) whose store holds runs 1 and 2."""
    monkeypatch.chdir(tmp_path)
    with StoreBackend(tmp_path / ".kernelscope") as store:
        store.write_run(make_mlp_run(tmp_path, created=1.0))
        store.write_run(make_mlp_run(tmp_path, created=2.0))
    return tmp_path / ".kernelscope"


def run_dump(root: Path, run_id: int) -> str:
    with StoreBackend(root, create=False) as store:
        return json.dumps(store.dump(run_id), sort_keys=True)


def tree(root: Path, run_id: int) -> dict[str, bytes]:
    base = root / "runs" / str(run_id)
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


# -- the database file ----------------------------------------------------------------------


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('someone')")
    conn.commit()
    conn.close()


def _schema(version: str):
    def write(path: Path) -> None:
        with StoreBackend(path.parent):
            pass
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'store_schema_version'", (version,))
        conn.commit()
        conn.close()
    return write


DATABASE_FAULTS = {
    "random-bytes": (lambda path: path.write_bytes(os.urandom(8192)), "damaged or not a readable SQLite database"),
    "truncated-header": (lambda path: path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 80),
                         "damaged or not a readable SQLite database"),
    "foreign-sqlite": (_foreign, "an SQLite database but not a kernelscope store"),
    "newer-schema": (_schema("99"), "upgrade kernelscope to read it"),
    "older-schema": (_schema("1"), "written by an older kernelscope"),
}


@pytest.mark.parametrize("fault", sorted(DATABASE_FAULTS))
def test_a_bad_database_file_is_one_clear_message(tmp_path, capsys, fault):
    root = tmp_path / "store"
    root.mkdir()
    make, expected = DATABASE_FAULTS[fault]
    make(root / "kernelscope.sqlite")
    before = (root / "kernelscope.sqlite").read_bytes()
    for args in (["runs"], ["query", f"{MLP_PATH}:{GELU_LINE}"], ["show"], ["dump"]):
        code, out, err = cli(capsys, *args, "--store", str(root))
        assert code == 5, (args, err)
        assert err.count("\n") == 1 and expected in err and str(root / "kernelscope.sqlite") in err, err
        assert "Traceback" not in err
    assert (root / "kernelscope.sqlite").read_bytes() == before  # reading changed nothing


def test_doctor_sets_an_unreadable_database_aside_and_leaves_foreign_ones(tmp_path, capsys):
    damaged, foreign = tmp_path / "damaged", tmp_path / "foreign"
    for root, make in ((damaged, DATABASE_FAULTS["random-bytes"][0]), (foreign, _foreign)):
        root.mkdir()
        make(root / "kernelscope.sqlite")
    (damaged / "runs" / "1").mkdir(parents=True)

    code, out, _ = cli(capsys, "doctor", "--store", str(damaged))
    assert code == 5 and "does not open as an SQLite database" in out and "--repair: set it aside" in out
    code, out, _ = cli(capsys, "doctor", "--store", str(damaged), "--repair")
    assert code == 0 and "set the database and its run folders aside" in out and "empty store" in out, out
    aside = [p for p in damaged.iterdir() if p.name.startswith("damaged-")]
    assert len(aside) == 1 and (aside[0] / "kernelscope.sqlite").exists() and (aside[0] / "runs" / "1").is_dir()
    with StoreBackend(damaged) as store:  # a new store starts where the damaged one was
        assert store.write_run(make_mlp_run(tmp_path)) == 1

    before = (foreign / "kernelscope.sqlite").read_bytes()
    code, out, _ = cli(capsys, "doctor", "--store", str(foreign), "--repair")
    assert code == 5 and "not a kernelscope store" in out
    assert (foreign / "kernelscope.sqlite").read_bytes() == before


def test_doctor_on_a_healthy_store(two_runs, capsys):
    code, out, _ = cli(capsys, "doctor")
    assert code == 0 and "2 run(s)" in out and "healthy" in out
    code, out, _ = cli(capsys, "doctor", "--json")
    report = json.loads(out)
    assert report["healthy"] and report["files_checked"] == 14 and report["problems"] == []


# -- generated files ------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "edited"])
def test_a_missing_or_edited_generated_file(two_runs, capsys, damage):
    kernel = two_runs / KERNEL.format(run=2)
    if damage == "missing":
        kernel.unlink()
    else:
        kernel.write_text(kernel.read_text() + "# my note\n")
    good_dump, good_files = run_dump(two_runs, 1), tree(two_runs, 1)

    code, out, err = cli(capsys, "query", f"{KERNEL.format(run=2)}:5")
    assert code == 0  # answered from what was recorded, with one warning naming the file
    warning = "is missing" if damage == "missing" else "was changed after the run was recorded"
    assert err.count("\n") == 1 and warning in err and "kernelscope doctor" in err

    code, out, _ = cli(capsys, "doctor")
    assert code == 5 and warning in out and "--repair: drop run 2" in out
    code, out, _ = cli(capsys, "doctor", "--repair")
    assert code == 0 and "dropped run 2" in out
    assert run_dump(two_runs, 1) == good_dump and tree(two_runs, 1) == good_files  # the good run untouched
    assert not (two_runs / "runs" / "2").exists()
    code, out, _ = cli(capsys, "runs", "--json")
    assert [run["id"] for run in json.loads(out)] == [1]


def test_rows_that_are_not_whole_drop_only_their_run(two_runs, capsys):
    conn = sqlite3.connect(two_runs / "kernelscope.sqlite")
    conn.execute("DELETE FROM kernels WHERE run_id = 2 AND name LIKE 'triton%'")  # foreign keys off: orphans stay
    conn.commit()
    conn.close()
    good = run_dump(two_runs, 1)
    report = integrity.check(two_runs)
    assert {p.kind for p in report.problems} >= {"incomplete_run", "foreign_keys"}
    assert report.damaged_runs() == [2]
    repaired = integrity.repair(two_runs)
    assert repaired.healthy and run_dump(two_runs, 1) == good


def test_leftovers_of_interrupted_writes_are_removed_under_the_write_lock(two_runs, capsys):
    (two_runs / "runs" / ".incoming-abc123" / "graphs").mkdir(parents=True)
    (two_runs / "runs" / "7" / "graphs").mkdir(parents=True)  # renamed into place, never committed
    code, out, _ = cli(capsys, "doctor")
    assert code == 5 and out.count("--repair: remove it") == 2
    good = {run: tree(two_runs, run) for run in (1, 2)}
    code, out, _ = cli(capsys, "doctor", "--repair")
    assert code == 0 and "removed runs/.incoming-abc123" in out and "removed runs/7" in out
    assert {run: tree(two_runs, run) for run in (1, 2)} == good


# -- read-only folder and full disk: real mounts in a private namespace ----------------------


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="mount namespaces are not allowed here")


def in_namespace(setup: str, script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `setup` (mount commands) then Python `script`, in a private mount namespace."""
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    command = f"{setup} && exec {sys.executable} -c \"$SCRIPT\""
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", command],
                          env={**env, "SCRIPT": textwrap.dedent(script)}, capture_output=True, text=True,
                          timeout=timeout)


@needs_mount
def test_a_read_only_store_folder_reads_and_refuses_writes_clearly(two_runs):
    good = run_dump(two_runs, 2)
    done = in_namespace(f"mount --bind -o ro {two_runs} {two_runs}", f"""
        import json, os
        from pathlib import Path
        from kernelscope.cli import main
        from kernelscope.errors import StoreError
        from kernelscope.store import StoreBackend
        from kernelscope.store.health import integrity
        from synthetic_runs import make_mlp_run
        root = Path({str(two_runs)!r})
        os.chdir(root.parent)
        assert main(["runs"]) == 0
        assert main(["query", "examples/mlp.py:13"]) == 0
        with StoreBackend(root, create=False) as store:
            print("DUMP", json.dumps(store.dump(2), sort_keys=True))
            try:
                store.write_run(make_mlp_run(root.parent))
            except StoreError as error:
                print("WRITE", error)
        print("DOCTOR", integrity.check(root).healthy)
    """)
    assert done.returncode == 0, done.stderr
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()
             if line.split(" ", 1)[0] in ("DUMP", "WRITE", "DOCTOR")}
    assert lines["DUMP"] == good
    assert "read-only" in lines["WRITE"] and "--store DIR" in lines["WRITE"]
    assert lines["DOCTOR"] == "True"


@needs_mount
def test_a_full_disk_during_a_write_loses_nothing(tmp_path):
    store = tmp_path / "small"
    store.mkdir()
    done = in_namespace(f"mount -t tmpfs -o size=1m tmpfs {store}", f"""
        from pathlib import Path
        from kernelscope.errors import StoreError
        from kernelscope.store import StoreBackend
        from kernelscope.store.health import integrity
        from synthetic_runs import make_mlp_run
        root, workspace = Path({str(store)!r}), Path({str(tmp_path)!r})
        written = []
        with StoreBackend(root) as opened:
            for attempt in range(200):
                try:
                    written.append(opened.write_run(make_mlp_run(workspace, created=float(attempt))))
                except StoreError as error:
                    print("FULL", error)
                    break
            print("RUNS", [run.id for run in opened.runs()][::-1] == written, len(written))
        report = integrity.check(root)
        print("DOCTOR", report.healthy, [p.message for p in report.problems])
        print("LEFT", sorted(p.name for p in (root / "runs").iterdir() if not p.name.isdigit()))
    """)
    assert done.returncode == 0, done.stderr
    out = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "no space left" in out["FULL"] and "the earlier runs are intact" in out["FULL"], done.stdout
    ok, count = out["RUNS"].split()
    assert ok == "True" and int(count) >= 1
    assert out["DOCTOR"] == "True []", done.stdout
    assert out["LEFT"] == "[]"
