"""What every builder of the suite shares: seeding, example inputs, and `Call`, which calls
a library model with keyword arguments as a user's script does."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs are built in code: nothing is downloaded

import torch
from torch import nn

BATCH, SEQ = 2, 32
IMAGE = 64


class Call(nn.Module):
    """`model(**dict(zip(names, tensors)))`, and one field of what it returns (`loss` for training).

    kernelscope passes a factory's example inputs positionally; library models take most of
    theirs by keyword (`labels=`, `decoder_input_ids=`), so this names them. Training follows
    PyTorch's own benchmarks (benchmarks/dynamo/huggingface.py): the model computes its loss
    from `labels`, and the loss alone is differentiated."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], output: str | None = None):
        super().__init__()
        self.model = model
        self.names = tuple(names)
        self.output = output

    def forward(self, *tensors):
        result = self.model(**dict(zip(self.names, tensors)))
        return getattr(result, self.output) if self.output else result


def seeded(build):
    """build() under a fixed seed, so every run of a factory makes the same weights and inputs."""
    torch.manual_seed(0)
    return build()


def token_ids(vocab_size: int, batch: int = BATCH, seq: int = SEQ) -> torch.Tensor:
    return torch.randint(0, vocab_size, (batch, seq))


def images(batch: int = BATCH, size: int = IMAGE, channels: int = 3) -> torch.Tensor:
    return torch.randn(batch, channels, size, size)


def mode(model: nn.Module, train: bool) -> nn.Module:
    return model.train() if train else model.eval()


def factories(make, build):
    """The (inference, training) factory pair of one model: make(build, train) -> (model, inputs)."""

    def inference():
        return make(build, False)

    def training():
        return make(build, True)

    return inference, training
