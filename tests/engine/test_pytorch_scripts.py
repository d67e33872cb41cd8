"""PyTorch's own scripts, written for a GPU, recorded unmodified on virtual-cuda.

The scripts are not in this repository (their code stays in theirs): point the variables at
checkouts of PyTorch's repositories, and each test runs the script from there as it is:
  KERNELSCOPE_PYTORCH_TUTORIALS=/path/to/github.com/pytorch/tutorials
  KERNELSCOPE_PYTORCH_EXAMPLES=/path/to/github.com/pytorch/examples
Without them the tests are skipped. docs/targets.md ("Programs written by others") gives
the commands and what was seen.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from program_runs import kernelscope, recorded_run

pytestmark = pytest.mark.slow


def _checkout(variable: str, relative: str) -> Path:
    root = os.environ.get(variable)
    if not root:
        pytest.skip(f"{variable} is not set (a checkout of PyTorch's repository; see this module's docstring)")
    script = Path(root) / relative
    assert script.is_file(), f"{variable}={root} has no {relative}"
    return script


def test_the_compiled_optimizer_with_an_lr_scheduler_recipe(tmp_path):
    """recipes_source/compiling_optimizer_lr_scheduler.py: Adam's step and a LinearLR step in
    one `torch.compile`d function on a model made on "cuda", first with a tensor LR, then with
    a float LR (which recompiles at each step, as the recipe shows)."""
    script = _checkout("KERNELSCOPE_PYTORCH_TUTORIALS", "recipes_source/compiling_optimizer_lr_scheduler.py")
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", str(script), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # the recipe's own sample output: the LR the scheduler sets, step by step
    assert re.findall(r"tensor\(([0-9.]+)\)", done.stdout) == ["0.0047", "0.0060", "0.0073", "0.0087", "0.0100"]
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda"
    # Adam's step, once for the tensor LR, then again for each new float LR
    lr_guards = [entry for entry in run["recompiles"] if "param_groups[0]['lr'] ==" in entry["reason"]]
    assert len(lr_guards) == 4
    for graph in run["graphs"]:
        assert any(kernel["kind"] == "triton" for kernel in graph["kernels"])
        wrapper = (store / "runs" / "1" / graph["wrapper_file"]["path"]).read_text()
        assert "device_str='cuda'" in wrapper or "empty_strided_cuda" in wrapper


def test_the_word_language_model_example_runs_its_gpu_path_and_compiles_nothing(tmp_path):
    """word_language_model/main.py --accel: trains on `torch.accelerator`'s device (cuda on the
    virtual GPU) with a corpus made here; it has no torch.compile, so nothing is recorded and
    `kernelscope run` says so (exit 4)."""
    script = _checkout("KERNELSCOPE_PYTORCH_EXAMPLES", "word_language_model/main.py")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    words = "the a of to and in is was for on with as by at from that this it be are model".split()
    for name, lines in (("train", 300), ("valid", 40), ("test", 40)):
        (corpus / f"{name}.txt").write_text("".join(
            " ".join(words[(line * 7 + index * 3) % len(words)] for index in range(5 + line % 11)) + "\n"
            for line in range(lines)))
    done = kernelscope("run", str(script), "--store", str(tmp_path / ".kernelscope"), "--",
                       "--accel", "--data", str(corpus), "--epochs", "1", "--model", "Transformer", "--dry-run",
                       "--save", str(tmp_path / "model.pt"), cwd=tmp_path)
    assert "Using device: cuda" in done.stdout and "End of training" in done.stdout, done.stderr[-3000:]
    assert done.returncode == 4 and "compiled nothing with torch.compile" in done.stderr
