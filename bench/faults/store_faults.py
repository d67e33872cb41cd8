"""Store faults: each one injected into a fresh store holding two good runs, then the
user-visible result checked: one clear line (exit 5, no traceback), `kernelscope doctor`
reports it, `--repair` repairs what can be repaired, and the good run is untouched.
The read-only folder and the full disk are real mounts (a read-only bind mount, a 1 MB
tmpfs) in a private mount namespace; they are skipped where mounting is not allowed."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from faults.common import REPO, Tally

KERNEL = "runs/2/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py"


def run() -> Tally:
    tally = Tally("store faults")
    for name, scenario in SCENARIOS.items():
        work = Path(tempfile.mkdtemp(prefix=f"kernelscope-store-{name}-"))
        try:
            store = _two_runs(work)
            good = _dump(store, 1)
            outcome = scenario(store, work)
            if outcome is None:
                continue  # not possible here (no mount namespaces)
            tally.injected += 1
            ok, said = outcome
            if ok and name not in ("random_bytes", "foreign", "newer_schema", "older_schema") \
                    and _dump(store, 1) != good:
                ok, said = False, f"{said}; the good run changed"
            tally.say(f"{name}: {said}")
            if ok:
                tally.survived += 1
            else:
                tally.fail(f"{name}: {said}")
        except Exception as error:  # noqa: BLE001 - a scenario that breaks is a failure, not a stop
            tally.injected += 1
            tally.fail(f"{name}: {type(error).__name__}: {error}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tally


def _two_runs(work: Path) -> Path:
    from synthetic_runs import make_mlp_run

    from kernelscope.store import StoreBackend

    with StoreBackend(work / ".kernelscope") as store:
        store.write_run(make_mlp_run(work, created=1.0))
        store.write_run(make_mlp_run(work, created=2.0))
    return work / ".kernelscope"


def _dump(store: Path, run_id: int) -> str | None:
    from kernelscope.store import StoreBackend

    try:
        with StoreBackend(store, create=False) as opened:
            return json.dumps(opened.dump(run_id), sort_keys=True)
    except Exception:  # noqa: BLE001
        return None


def _cli(*args: str) -> tuple[int, str, str]:
    from kernelscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _one_line_error(store: Path, expected: str) -> tuple[bool, str]:
    code, _, err = _cli("runs", "--store", str(store))
    ok = code == 5 and err.count("\n") == 1 and expected in err and "Traceback" not in err
    return ok, err.strip()


def _replace_database(make):
    def scenario(store: Path, work: Path):
        shutil.rmtree(store)
        store.mkdir()
        expected, repaired = make(store / "kernelscope.sqlite")
        ok, said = _one_line_error(store, expected)
        code, out, _ = _cli("doctor", "--store", str(store), "--repair")
        if repaired:
            ok = ok and code == 0 and "aside" in out
        else:
            ok = ok and code == 5  # reported, left as it is
        return ok, said
    return scenario


def _random_bytes(path: Path):
    path.write_bytes(os.urandom(8192))
    return "damaged or not a readable SQLite database", True


def _foreign(path: Path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    return "not a kernelscope store", False


def _schema(version: str, expected: str):
    def make(path: Path):
        from kernelscope.store import StoreBackend

        with StoreBackend(path.parent):
            pass
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'store_schema_version'", (version,))
        conn.commit()
        conn.close()
        return expected, False
    return make


def _file_damage(edit: bool):
    def scenario(store: Path, work: Path):
        kernel = store / KERNEL
        if edit:
            kernel.write_text(kernel.read_text() + "# edited\n")
        else:
            kernel.unlink()
        code, _, err = _cli("query", f"{KERNEL}:5", "--store", str(store))
        warned = code == 0 and err.count("\n") == 1 and ("missing" in err or "was changed" in err)
        code, out, _ = _cli("doctor", "--store", str(store), "--repair")
        return warned and code == 0 and "dropped run 2" in out, err.strip()
    return scenario


def _incomplete_rows(store: Path, work: Path):
    conn = sqlite3.connect(store / "kernelscope.sqlite")
    conn.execute("DELETE FROM graphs WHERE run_id = 2 AND kind = 'backward'")
    conn.commit()
    conn.close()
    code, out, _ = _cli("doctor", "--store", str(store))
    found = code == 5 and "run 2 has" in out
    code, out, _ = _cli("doctor", "--store", str(store), "--repair")
    return found and code == 0 and "dropped run 2" in out, out.strip().splitlines()[1] if out.strip() else ""


def _leftovers(store: Path, work: Path):
    (store / "runs" / ".incoming-x1" / "graphs").mkdir(parents=True)
    (store / "runs" / "9").mkdir()
    code, out, _ = _cli("doctor", "--store", str(store), "--repair")
    return code == 0 and out.count("removed") == 2, "removed 2 leftovers of interrupted writes"


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True).returncode == 0


def _in_namespace(setup: str, script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]),
               SCRIPT=textwrap.dedent(script))
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"{setup} && exec {sys.executable} -c \"$SCRIPT\""],
                          env=env, capture_output=True, text=True, timeout=300)


def _read_only(store: Path, work: Path):
    if not _can_mount():
        return None
    done = _in_namespace(f"mount --bind -o ro {store} {store}", f"""
        from pathlib import Path
        from kernelscope.cli import main
        from kernelscope.errors import StoreError
        from kernelscope.store import StoreBackend
        from synthetic_runs import make_mlp_run
        root = Path({str(store)!r})
        assert main(["runs", "--store", str(root)]) == 0
        try:
            with StoreBackend(root) as opened:
                opened.write_run(make_mlp_run(root.parent))
        except StoreError as error:
            print("SAID", error)
    """)
    said = next((line[5:] for line in done.stdout.splitlines() if line.startswith("SAID ")), done.stderr[-300:])
    return done.returncode == 0 and "read-only" in said, said


def _full_disk(store: Path, work: Path):
    if not _can_mount():
        return None
    small = work / "small"
    small.mkdir()
    done = _in_namespace(f"mount -t tmpfs -o size=1m tmpfs {small}", f"""
        from pathlib import Path
        from kernelscope.errors import StoreError
        from kernelscope.store import StoreBackend
        from kernelscope.store.health import integrity
        from synthetic_runs import make_mlp_run
        root = Path({str(small)!r}) / ".kernelscope"
        written = 0
        with StoreBackend(root) as opened:
            for attempt in range(500):
                try:
                    opened.write_run(make_mlp_run(Path({str(work)!r}), created=float(attempt)))
                    written += 1
                except StoreError as error:
                    print("SAID", error)
                    break
            kept = len(opened.runs())
        print("KEPT", written, kept, integrity.check(root).healthy)
    """)
    said = next((line[5:] for line in done.stdout.splitlines() if line.startswith("SAID ")), done.stderr[-300:])
    kept = next((line.split()[1:] for line in done.stdout.splitlines() if line.startswith("KEPT ")), [])
    ok = "no space left" in said and len(kept) == 3 and kept[0] == kept[1] and kept[2] == "True"
    return ok, f"{said} ({kept[0] if kept else '?'} runs written before, all intact)"


SCENARIOS = {
    "random_bytes": _replace_database(_random_bytes),
    "foreign": _replace_database(_foreign),
    "newer_schema": _replace_database(_schema("99", "upgrade kernelscope to read it")),
    "older_schema": _replace_database(_schema("1", "written by an older kernelscope")),
    "missing_file": _file_damage(edit=False),
    "edited_file": _file_damage(edit=True),
    "incomplete_rows": _incomplete_rows,
    "leftovers": _leftovers,
    "read_only_mount": _read_only,
    "full_disk": _full_disk,
}
