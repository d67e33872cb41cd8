"""A small MLP trained with activation checkpointing, for
`kernelscope run examples/checkpoint_train.py -- --steps 2`.

Each residual block's feed-forward runs under `torch.utils.checkpoint.checkpoint`
(non-reentrant): its activations are not kept for the backward but computed again there,
trading compute for memory. torch.compile's partitioner copies the checkpointed forward
ops into the backward graph; kernelscope marks those backward nodes as recomputed from
their forward line (`kernelscope query examples/checkpoint_train.py:LINE` on the `F.gelu`
line names what the backward recomputes). Nothing here knows about kernelscope: on a
machine without a GPU, virtual-cuda runs it as written; `--device cpu` runs it on the CPU.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class FeedForward(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.up(self.norm(x))
        h = F.gelu(h, approximate="tanh")
        return self.down(h)


class Net(nn.Module):
    def __init__(self, dim: int = 64, blocks: int = 2, classes: int = 10):
        super().__init__()
        self.blocks = nn.ModuleList(FeedForward(dim) for _ in range(blocks))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=False)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Net().to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(model)
    inputs = torch.randn(32, 64, device=args.device)
    targets = torch.randint(0, 10, (32,), device=args.device)
    for index in range(args.steps):
        loss = F.cross_entropy(step(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {index}: loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
