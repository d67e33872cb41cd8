"""End to end in a real terminal: `kernelscope tui` under tmux, keys sent with
send-keys, the screen read back with capture-pane (colours included)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from conftest import REPO, example_line

from kernelscope.store import StoreBackend

TMUX = shutil.which("tmux")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(TMUX is None, reason="tmux is not installed (scripts/setup.sh installs it)")]
WIDTH, HEIGHT = 160, 48
SGR = re.compile(r"\x1b\[([0-9;]*)m")


@pytest.fixture(scope="module")
def mlp_store(recordings, tmp_path_factory):
    root = tmp_path_factory.mktemp("tui-tmux") / ".kernelscope"
    with StoreBackend(root) as store:
        assert store.write_run(recordings.get("mlp")) == 1
    return root


@pytest.fixture
def terminal():
    session = f"kernelscope-test-{uuid.uuid4().hex[:8]}"
    yield session
    subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True)


def tmux(*args: str) -> str:
    return subprocess.run([TMUX, *args], capture_output=True, text=True, check=True).stdout


def screen(session: str, colours: bool = False) -> list[str]:
    args = ["capture-pane", "-p", "-t", session] + (["-e"] if colours else [])
    return tmux(*args).splitlines()


def wait_for(session: str, needle: str, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = screen(session)
        if any(needle in line for line in lines):
            return lines
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen:\n" + "\n".join(screen(session)))


def backgrounds(row: str) -> list[str | None]:
    """The background colour of each printed character of a captured row (`-e` output)."""
    colours: list[str | None] = []
    background: str | None = None
    position = 0
    for match in SGR.finditer(row + "\x1b[m"):
        colours += [background] * len(row[position:match.start()])
        position = match.end()
        codes = match.group(1).split(";") if match.group(1) else ["0"]
        index = 0
        while index < len(codes):
            code = codes[index]
            if code in ("0", ""):
                background = None
            elif code == "49":
                background = None
            elif code == "48" and index + 1 < len(codes):
                width = 4 if codes[index + 1] == "2" else 2
                background = ";".join(codes[index + 1:index + 1 + width])
                index += width
            elif code == "38" and index + 1 < len(codes):
                index += 4 if codes[index + 1] == "2" else 2
            elif len(code) in (2, 3) and (code.startswith("4") or code.startswith("10")) and code != "4":
                background = code
            index += 1
    return colours


def background_of(coloured: list[str], needle: str) -> str | None:
    """The background under the first character of `needle` on screen."""
    for row in coloured:
        plain = SGR.sub("", row)
        column = plain.find(needle)
        if column >= 0:
            return backgrounds(row)[column]
    raise AssertionError(f"{needle!r} is not on screen:\n" + "\n".join(SGR.sub("", row) for row in coloured))


def test_tui_in_a_real_terminal_highlights_the_linked_lines(mlp_store, terminal):
    gelu = example_line("mlp", "h = F.gelu(h)")
    # COLUMNS/LINES (set by pytest's terminal or a CI runner) would override the window's real size.
    command = (f"cd {REPO} && env -u COLUMNS -u LINES COLORTERM=truecolor TERM=xterm-256color "
               f"{sys.executable} -m kernelscope tui "
               f"--store {mlp_store} --run 1")
    tmux("new-session", "-d", "-s", terminal, "-x", str(WIDTH), "-y", str(HEIGHT), command)
    # Without a client tmux may fall back to 80x24; fix the window's size explicitly.
    tmux("set-option", "-t", terminal, "window-size", "manual")
    tmux("resize-window", "-t", terminal, "-x", str(WIDTH), "-y", str(HEIGHT))
    assert tmux("display-message", "-p", "-t", terminal,
                "#{window_width}x#{window_height}").strip() == f"{WIDTH}x{HEIGHT}"
    wait_for(terminal, "run 1 · examples/mlp.py")
    wait_for(terminal, "[0/0] inference")  # the first line's links are on screen
    tmux("send-keys", "-t", terminal, "1", "g")  # the source pane, its first line; then down to GELU
    for _ in range(gelu - 1):
        tmux("send-keys", "-t", terminal, "j")
    lines = wait_for(terminal, "post-grad mul, mul_1, erf")
    text = "\n".join(lines)
    assert "triton_per_fused_addmm_gelu_native_layer_norm_0" in text  # the kernel list and the chain
    assert "triton_per_fused__softmax_prepare_softmax_online_1" in text
    assert "kernel: run 1" in text and "wrapper: run 1" in text

    coloured = screen(terminal, colours=True)
    cursor = background_of(coloured, "h = F.gelu(h)")
    linked_post = background_of(coloured, "erf: ")
    unlinked_post = background_of(coloured, "permute: ")
    launch = background_of(coloured, "triton_per_fused_addmm_gelu_native_layer_norm_0.run(")
    assert cursor is not None, "the cursor line has a background"
    assert linked_post is not None and linked_post != unlinked_post, "the erf node is highlighted, permute is not"
    assert launch == linked_post, "the kernel's launch in the wrapper has the linked-line colour"
    assert cursor != linked_post, "the cursor and the linked lines look different"

    tmux("send-keys", "-t", terminal, "?")
    wait_for(terminal, "kernelscope tui — keys")
    tmux("send-keys", "-t", terminal, "Escape")
    time.sleep(0.5)
    tmux("send-keys", "-t", terminal, "q")
    deadline = time.monotonic() + 20
    while subprocess.run([TMUX, "has-session", "-t", terminal], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "q did not quit:\n" + "\n".join(screen(terminal))
        time.sleep(0.2)
