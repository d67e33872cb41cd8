"""torchtitan's own trainer, unmodified, recorded on virtual-cuda (no GPU) with `kernelscope run`.

The program is the installed `torchtitan/train.py` (torchtitan 0.3.0) with its debug Llama
(`--module llama3 --config llama3_debugmodel`): FlexAttention, selective activation
checkpointing and fused AdamW as the config has them, `--compile.enable` (each block and the
loss compiled), torch's fake process group of one rank (`--world-size 1`), 2 steps at
sequence length 256. What the test supplies, none of it torchtitan's code:
- the debug config's assets, which live in torchtitan's repository, not its wheel: a
  byte-level BPE tokenizer trained here on generated text and a `c4_test` dataset of that
  text (JSON lines), so nothing is downloaded;
- torchtitan's training stack (torchdata, datasets, tensorboard), installed apart by
  scripts/setup.sh (requirements-torchtitan-train.txt);
- tests/data/torch_compat/sitecustomize.py: `torch.distributed.set_timeout`, newer than
  torch 2.13, which torchtitan calls after the first step;
- `--training.disable-cuda-graphs`: torchtitan's CUDA graphs are refused on the virtual GPU.

docs/targets.md ("torchtitan's own trainer") gives the same command to run by hand.
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from program_runs import recorded_run, recorded_text

pytestmark = pytest.mark.slow

# where scripts/setup.sh installs requirements-torchtitan-train.txt (the variable names another place)
TRAIN_STACK = Path(os.environ.get("KERNELSCOPE_TORCHTITAN_TRAIN", REPO / ".venv" / "torchtitan-train"))
TORCH_COMPAT = REPO / "tests" / "data" / "torch_compat"
STEPS = 2


def make_assets(root: Path) -> tuple[Path, Path]:
    """A tokenizer and a `c4_test` dataset standing in for torchtitan's tests/assets:
    (tokenizer folder, dataset folder). The vocabulary (1,000) fits the debug model's 2,048."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer_dir, dataset_dir = root / "tokenizer", root / "c4_test"
    tokenizer_dir.mkdir(parents=True)
    dataset_dir.mkdir(parents=True)
    rng = random.Random(0)
    words = ("the a of to and in is was for on with as by at from that this it be are model train graph "
             "kernel compile tensor gradient layer attention token data river mountain city garden music "
             "story science history light water stone").split()
    texts = [" ".join(" ".join(rng.choice(words) for _ in range(rng.randint(6, 18))).capitalize() + "."
                      for _ in range(rng.randint(5, 30))) for _ in range(400)]
    (dataset_dir / "data.json").write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))

    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=1000, special_tokens=[bos, eos], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.save(str(tokenizer_dir / "tokenizer.json"))
    (tokenizer_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": bos, "eos_token": eos, "add_bos_token": True, "add_eos_token": True,
         "model_max_length": 2048}))
    return tokenizer_dir, dataset_dir


def trainer_command(store: Path, tokenizer: Path, dataset: Path, out: Path, *overrides: str) -> list[str]:
    spec = importlib.util.find_spec("torchtitan")
    train_py = Path(spec.origin).parent / "train.py"
    return [sys.executable, "-m", "kernelscope", "run", str(train_py), "--world-size", "1", "--store", str(store),
            "--", "--module", "llama3", "--config", "llama3_debugmodel",
            "--hf-assets-path", str(tokenizer), "--dataloader.dataset-path", str(dataset),
            "--training.steps", str(STEPS), "--training.local-batch-size", "2", "--training.seq-len", "256",
            "--training.disable-cuda-graphs", "--compile.enable", "--dump-folder", str(out), *overrides]


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory):
    """torchtitan's trainer recorded once: (store, its log: stdout and stderr)."""
    if importlib.util.find_spec("torchtitan") is None:
        pytest.skip("torchtitan is not installed: ./scripts/setup.sh installs it (requirements-torchtitan.txt)")
    assert (TRAIN_STACK / "datasets").is_dir() and (TRAIN_STACK / "torchdata").is_dir(), (
        f"torchtitan's training stack is not in {TRAIN_STACK}: run ./scripts/setup.sh "
        "(it installs requirements-torchtitan-train.txt there)")
    root = tmp_path_factory.mktemp("torchtitan")
    tokenizer, dataset = make_assets(root / "assets")
    store = root / ".kernelscope"
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", HF_HOME=str(root / "hf"),
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(REPO), str(TORCH_COMPAT), str(TRAIN_STACK)]))
    done = subprocess.run(trainer_command(store, tokenizer, dataset, root / "out"), cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    return store, log


def test_the_trainer_trains_its_steps_on_the_virtual_gpu(trainer_run):
    _, log = trainer_run
    losses = [float(loss) for loss in re.findall(r"step:\s+\d+\s+(?:\x1b\[[0-9;]*m)?loss:\s+([0-9.]+)", log)]
    assert len(losses) == STEPS and all(0 < loss < 20 for loss in losses), log[-3000:]
    assert "Applied SelectiveAC activation checkpointing" in log and "Compiling each TransformerBlock" in log
    assert "rank 0 of 1 (fake)" in log
    # every kernel and wrapper line of every graph attributed (kernelscope run's summary)
    assert "kernels agreeing with Inductor's own mapping: 100.0%" in log
    assert "wrapper lines attributed: 100.0%" in log


def test_its_compiled_blocks_hold_flex_attentions_templates_for_cuda(trainer_run):
    store, _ = trainer_run
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda" and run["mode"] == "train"
    assert run["target"].endswith("torchtitan/train.py")
    assert run["graph_breaks"] == [] and run["recompiles"] == []
    graphs = [graph for graph in run["graphs"] if graph["subgraph"] is None]  # not FlexAttention's mod subgraphs
    kinds = [graph["kind"] for graph in graphs]
    assert kinds.count("forward") == 2 and kinds.count("backward") == 2  # the block's and the loss's
    for kind, op in (("forward", "flex_attention"), ("backward", "flex_attention_backward")):
        [graph] = [graph for graph in graphs
                   if graph["kind"] == kind and f"higher_order.{op}(" in recorded_text(store, graph, "post_grad_file")]
        post_grad = recorded_text(store, graph, "post_grad_file")
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), kind
        templates = [kernel for kernel in graph["kernels"]
                     if kernel["name"].startswith("triton_tem_fused") and op in kernel["name"]]
        assert len(templates) == 1, kind
        source = (store / "runs" / "1" / templates[0]["file"]["path"]).read_text()
        assert "DeviceProperties(type='cuda'" in source and "cc=90" in source, kind
        if kind == "forward":
            # the attention node's line is torchtitan's own attention call
            [node] = [node for node in graph["post_grad_nodes"]
                      if node["target"] == "torch.ops.higher_order.flex_attention"]
            assert node["source"]["file"].endswith("torchtitan/models/common/attention.py")
