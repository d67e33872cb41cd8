"""The VS Code extension end to end in a real VS Code: code-server with the built
.vsix installed, driven through Debian's Chromium by Playwright
(vscode-extension/e2e/run-e2e.mjs), against the real `kernelscope lsp` and engine
worker. What the page showed is checked here against the store the compile
wrote. Screenshots are kept in test-artifacts/vscode/.

Set-up: scripts/setup-editors.sh (called by scripts/setup.sh)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

EXTENSION = REPO / "vscode-extension"
CODE_SERVER = EXTENSION / "e2e" / "node_modules" / ".bin" / "code-server"
SCENARIO = EXTENSION / "e2e" / "run-e2e.mjs"
ARTIFACTS = REPO / "test-artifacts" / "vscode"
MODEL_LINE = 21  # examples/mlp.py: `h = F.gelu(h)`

pytestmark = pytest.mark.slow


def vsix_path() -> Path:
    version = json.loads((EXTENSION / "package.json").read_text())["version"]
    return EXTENSION / f"kernelscope-{version}.vsix"


def require_setup() -> None:
    missing = [what for what, ok in [
        ("chromium", shutil.which("chromium") is not None),
        ("code-server", CODE_SERVER.exists()),
        ("playwright-core", (REPO / "node_modules" / "playwright-core").is_dir()),
        ("node", shutil.which("node") is not None),
    ] if not ok]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run ./scripts/setup-editors.sh (or ./scripts/setup.sh)")
    sources = [*EXTENSION.joinpath("src").rglob("*.ts"), *EXTENSION.joinpath("media").iterdir(),
               EXTENSION / "package.json"]
    vsix = vsix_path()
    if not vsix.exists() or max(p.stat().st_mtime for p in sources) > vsix.stat().st_mtime:
        # The .vsix is older than the extension's sources: test what is checked out.
        subprocess.run(["npm", "run", "package", "--silent"], cwd=REPO, check=True, capture_output=True, timeout=300)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"code-server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"code-server did not listen on port {port} within {timeout} s")


def process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, start time, state) of every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry.name)] = (int(fields[1]), int(fields[19]), fields[0])
    return table


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every process below `root` (the engine worker runs in a session of its own)."""
    table = process_table()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, start, _) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = start
                frontier.append(pid)
    return found


def alive(processes: dict[int, int]) -> list[int]:
    table = process_table()
    return [pid for pid, start in processes.items() if pid in table and table[pid][1] == start and table[pid][2] != "Z"]


def stop_tree(process: subprocess.Popen) -> dict[str, list[int]]:
    """Stop code-server and everything it spawned, each by its PID: SIGTERM to the
    whole tree (noted before anything exits), then SIGKILL to what is left.
    Returns the processes that outlived code-server's own exit and the survivors."""
    tree = {process.pid: process_table().get(process.pid, (0, 0, ""))[1], **descendants(process.pid)}
    for pid in alive(tree):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(tree):
        time.sleep(0.2)
    lingering = alive(tree)
    for pid in lingering:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.5)
    return {"needed_sigkill": lingering, "survivors": alive(tree)}


def make_workspace(root: Path) -> Path:
    workspace = root / "workspace"
    (workspace / "examples").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "mlp.py", workspace / "examples" / "mlp.py")
    (workspace / "pyproject.toml").write_text(
        '[tool.kernelscope]\ntarget = "examples/mlp.py:make"\ndevice = "virtual-cuda"\n')
    (workspace / ".vscode").mkdir()
    write_gpu_decisions(workspace / DECISIONS_FILE)
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(
        {"kernelscope.python": sys.executable, "kernelscope.decisions": DECISIONS_FILE}, indent=2))
    return workspace


# The workspace's `kernelscope.decisions` setting: a GPU's decisions file the server replays
# (checked in the stored run: the setting went from VS Code's settings to the compile).
DECISIONS_FILE = "gpu-decisions.json"


def write_gpu_decisions(path: Path) -> None:
    import torch
    import triton

    from kernelscope.decisions.model import DecisionSet, recorded_on, write_file

    gpu = {"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "sm_count": 132}
    write_file(DecisionSet("a colleague's H100",
                           recorded_on(gpu, torch.__version__, triton.__version__, "cuda", "cuda")), path)


USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "extensions.ignoreRecommendations": True,
    "telemetry.telemetryLevel": "off",
    "security.workspace.trust.enabled": False,
    "editor.minimap.enabled": False,
    "editor.hover.delay": 200,
    "window.commandCenter": False,
    "chat.disableAIFeatures": True,
    "git.enabled": False,
    "update.mode": "none",
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
}


def python_without_kernelscope(root: Path) -> Path:
    """An interpreter that cannot import kernelscope: the venv's base Python, isolated
    (-I: no environment variables, no current directory) and without site-packages (-S)."""
    wrapper = root / "python-without-kernelscope"
    base = os.path.realpath(sys.executable)
    wrapper.write_text(f'#!/bin/sh\nexec "{base}" -I -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def keep_logs(user_data: Path, artifacts: Path) -> None:
    """The extension's output channel (server log) and the extension host log, as artifacts."""
    for log in user_data.glob("logs/**/*.log"):
        if "kernelscope" in log.name or log.name in ("exthost.log", "remoteexthost.log"):
            shutil.copy(log, artifacts / log.name)


def run_in_code_server(tmp_path: Path, workspace: Path, scenario: Path, artifacts: Path, args: list[str],
                       timeout: float, user_settings: dict | None = None, workspace_trust: bool = False,
                       ) -> tuple[dict, subprocess.CompletedProcess, dict[str, list[int]]]:
    """The built extension installed into a fresh code-server profile, `workspace` opened,
    the Playwright `scenario` run against it with `args`: (its results.json, the scenario
    process, stop_tree's report of code-server's process tree). The scenario's output, the
    process report and the extension's logs are kept in `artifacts`. `user_settings` are
    added to USER_SETTINGS. Workspace trust is off (every folder trusted) unless
    `workspace_trust`: then the fresh profile trusts no folder, so `workspace` opens
    untrusted (Restricted Mode, once the scenario declines the trust prompt)."""
    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    settings = {**USER_SETTINGS, **(user_settings or {}), "security.workspace.trust.enabled": workspace_trust}
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    xdg = tmp_path / "xdg"
    env = dict(os.environ, XDG_CONFIG_HOME=str(xdg / "config"), XDG_DATA_HOME=str(xdg / "data"),
               XDG_CACHE_HOME=str(xdg / "cache"), XDG_STATE_HOME=str(xdg / "state"),
               TORCHINDUCTOR_COMPILE_THREADS="1")
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    install = subprocess.run([str(CODE_SERVER), *common, "--install-extension", str(vsix_path())],
                             env=env, capture_output=True, text=True, timeout=180)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "kernelscope.kernelscope" in subprocess.run(
        [str(CODE_SERVER), *common, "--list-extensions"], env=env, capture_output=True, text=True, timeout=60).stdout

    artifacts.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(artifacts / "code-server.log", "w") as server_log:
        code_server = subprocess.Popen(
            [str(CODE_SERVER), *common, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none",
             "--disable-telemetry", "--disable-update-check",
             *([] if workspace_trust else ["--disable-workspace-trust"]),
             "--disable-getting-started-override", str(workspace)],
            env=env, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_port(port, code_server)
            ran = subprocess.run(
                ["node", str(scenario), "--url", f"http://127.0.0.1:{port}/?folder={workspace}",
                 "--out", str(artifacts), *args],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        finally:
            stopped = stop_tree(code_server)
            keep_logs(user_data, artifacts)
    (artifacts / "scenario.log").write_text(ran.stdout + ran.stderr)
    (artifacts / "stopped-processes.json").write_text(json.dumps(stopped))
    return json.loads((artifacts / "results.json").read_text()), ran, stopped


def test_extension_in_code_server(tmp_path):
    require_setup()
    workspace = make_workspace(tmp_path)
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    results, scenario, stopped = run_in_code_server(
        tmp_path, workspace, SCENARIO, ARTIFACTS,
        ["--line", str(MODEL_LINE), "--needle", "F.gelu(h)",
         "--settings", str(workspace / ".vscode" / "settings.json"),
         "--python-without-kernelscope", str(python_without_kernelscope(tmp_path))],
        timeout=480)
    assert scenario.returncode == 0 and results["failure"] is None, (
        f"{results.get('failure')}\n--- scenario output ---\n{scenario.stdout[-4000:]}{scenario.stderr[-4000:]}")
    assert stopped["survivors"] == [], f"processes left running: {stopped}"

    check_against_store(workspace, results)


def gelu_kernel_text(store, run_id: int) -> str:
    kernel = next(k for k in store.show(run_id).kernels if "gelu" in k.name and k.kind == "triton")
    return store.absolute_path(kernel.file).read_text()


def check_against_store(workspace: Path, results: dict) -> None:
    from kernelscope.store import StoreBackend

    store = StoreBackend(workspace / ".kernelscope", create=False)
    runs = sorted(run.id for run in store.runs())
    run_id = runs[0]  # the Compile's run; watch mode recorded the later one
    assert results["statusAfterCompile"].endswith(f"kernelscope: run {run_id}")
    # the kernelscope.decisions setting reached the compile: the run replayed that file
    replay = store.run(run_id).decisions().replay
    assert replay is not None and DECISIONS_FILE in replay.source, replay

    answer = store.query(workspace / "examples" / "mlp.py", MODEL_LINE, run_id, "down")
    kernels = [k for chain in answer.graphs for k in chain.kernels if k.kind != "extern" and k.file]
    assert kernels, "the store links the GELU line to a Triton kernel"
    names = {k.name for k in kernels}

    # The hover names the kernels of that line.
    hover = results["hoverText"]
    assert all(name in hover for name in names), (names, hover)

    # F12 opens the first kernel at the first value the line's own nodes compute
    # (`tmpN = ...`), not at the kernel's shared index set-up.
    first = kernels[0]
    kernel_file = store.absolute_path(first.file)
    own = [line for line in first.lines if not line.reason.startswith("shared:")]
    values = [line.line for line in own if re.match(r"\s*tmp\d+ = ", line.text)]
    assert results["definition"]["tab"] == kernel_file.name
    assert results["definition"]["line"] == min(values or [line.line for line in own or first.lines])

    # Show kernels: the kernel beside the model, its linked lines highlighted, the model line as origin.
    linked = results["linked"]
    assert linked["kernelTab"] == kernel_file.name
    expected = {line.line for line in first.lines}
    assert linked["kernelLines"], "no highlighted kernel lines"
    assert set(linked["kernelLines"]) <= expected, (linked["kernelLines"], sorted(expected))
    assert linked["modelOrigin"] == [MODEL_LINE]

    # Cursor on a highlighted kernel line: the model's lines of that kernel line light up.
    up = store.query(kernel_file, results["reverse"]["kernelLine"], run_id, "up")
    model_lines = {s.line for chain in up.graphs for node in chain.post_nodes if node.source
                   for s in [node.source] if Path(s.file).name == "mlp.py"}
    assert MODEL_LINE in results["reverse"]["modelLines"]
    assert set(results["reverse"]["modelLines"]) <= model_lines | {MODEL_LINE}, (results["reverse"], model_lines)
    assert results["reverse"]["kernelOrigin"] == [results["reverse"]["kernelLine"]]

    # The run overview: the sections, the run's kernels, the fusion picture with edges.
    overview = results["overview"]
    details = store.show(run_id)
    assert overview["heading"].startswith(f"Run {run_id}")
    for section in ("Coverage", "Fusion", "Graphs", "Kernels", "Graph breaks", "Recompiles"):
        assert section in overview["sections"]
    triton_names = {k.name for k in details.kernels if k.kind != "extern"}
    assert triton_names <= {row[0] for row in overview["kernelRows"]}
    assert overview["edges"] > 0
    assert any(re.match(r"mlp\.py:21\b", s) for s in overview["sources"]), overview["sources"]
    assert names <= {t.split(" ")[0] for t in overview["kernels"]}
    assert results["overviewClick"]["activeTab"].startswith(results["overviewClick"]["kernel"])

    # Reveal source from that kernel line: the model editor, at the line.
    assert results["revealSource"]["tab"] == "mlp.py"
    assert results["revealSource"]["line"] in model_lines

    # The status bar's run picker lists the run; the inlay-hints setting reaches the server.
    assert any(f"Run {run_id} — examples/mlp.py:make" in row for row in results["runPicker"]), results["runPicker"]
    assert any("Follow the latest run" in row for row in results["runPicker"])
    assert results["inlayHints"] == {"before": True, "off": False, "back": True}

    # Watch mode: on, an edit saved records a new run that the status bar shows, off.
    watch = results["watch"]
    assert watch["watching"] and watch["stopped"]
    assert watch["statusAfterSave"].endswith(f"kernelscope: run {runs[-1]}") and runs[-1] > run_id, (watch, runs)
    assert 'h = F.gelu(h, approximate="tanh")' in (workspace / "examples" / "mlp.py").read_text()
    assert "libdevice.erf" in gelu_kernel_text(store, run_id)
    edited = gelu_kernel_text(store, runs[-1])
    assert "libdevice.tanh" in edited and "libdevice.erf" not in edited

    # An interpreter without kernelscope: a notification with the install command; back: the server restarts.
    missing = results["missing"]
    assert "kernelscope is not installed in" in missing["notification"]
    assert "python-without-kernelscope -m pip install -e" in missing["notification"]
    assert "Copy install command" in missing["buttons"]
    assert missing["status"].endswith("kernelscope: not installed")
    assert missing["statusAfterRestore"].endswith(f"kernelscope: run {run_id}")
