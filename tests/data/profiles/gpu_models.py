"""A GPU-sized model for `kernelscope compile --profile` on a GPU (the README's
figures): examples/nanogpt.py's GPT at a size whose step is bound by the GPU, not
by kernel launches. Not used by the test suite (it needs a GPU to be useful).

    kernelscope compile tests/data/profiles/gpu_models.py:nanogpt_gpu --train --target cuda --profile
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

from nanogpt import GPT  # noqa: E402

VOCAB, CONTEXT, BATCH = 8192, 512, 8


def nanogpt_gpu():
    torch.manual_seed(0)
    model = GPT(vocab=VOCAB, context=CONTEXT, dim=768, heads=12, layers=6)
    idx = torch.randint(0, VOCAB, (BATCH, CONTEXT))
    targets = torch.randint(0, VOCAB, (BATCH, CONTEXT))
    return model, (idx, targets)
