"""examples/nanogpt.py at GPT-2's width (768) and depth from 2 to 48 blocks: the deep
models the read-model benchmark (bench/query_bench.py) records, e.g.
`kernelscope compile bench/models/nanogpt_deep.py:make_48 --train`."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from nanogpt import GPT  # noqa: E402

WIDTH, HEADS = 768, 12


def make_deep(layers: int, width: int = WIDTH, heads: int = HEADS):
    torch.manual_seed(0)
    model = GPT(dim=width, heads=heads, layers=layers)
    idx = torch.randint(0, 96, (2, 32))
    targets = torch.randint(0, 96, (2, 32))
    return model, (idx, targets)


def make_2():
    return make_deep(2)


def make_12():
    return make_deep(12)


def make_48():
    return make_deep(48)


def make_12_small():
    """12 blocks at the example's width (64): deep enough to fold, cheap to record (tests)."""
    return make_deep(12, width=64, heads=4)
