"""A model that branches on its data with `torch.cond`, compiled for inference on a GPU, for
`kernelscope run examples/cond_model.py`.

Each block of the classifier takes its full MLP for inputs of large magnitude and a cheap
path otherwise. Written as `if x.abs().mean() > 1:` the branch would be a host sync and a
graph break (or a recompile per branch); `torch.cond` keeps both branches in one compiled
graph and decides on the GPU. The script classifies two batches, one of small and one of
large inputs, so both branches run, and prints what the model returned. Nothing here knows
about kernelscope: on a machine without a GPU, virtual-cuda runs it as written and records
the compiled graph (the `cond` with both branches compiled for cuda); the printed values are
real. `--device cpu --eager` runs the same program on the CPU without torch.compile.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class GatedBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        self.skip = nn.Linear(dim, dim)

    def forward(self, x):
        def full(h):
            return self.down(F.gelu(self.up(h)))

        def cheap(h):
            return torch.tanh(self.skip(h))

        return x + torch.cond(x.abs().mean() > 1.0, full, cheap, (self.norm(x),))


class Classifier(nn.Module):
    def __init__(self, dim: int = 64, classes: int = 10, layers: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(GatedBlock(dim) for _ in range(layers))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--eager", action="store_true", help="run without torch.compile")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Classifier().to(args.device).eval()
    run = model if args.eager else torch.compile(model)
    with torch.no_grad():
        for name, scale in (("small", 0.5), ("large", 3.0)):
            x = scale * torch.randn(16, 64, device=args.device)
            logits = run(x)
            print(f"{name} inputs (mean |x| {x.abs().mean().item():.3f}): logits sum "
                  f"{logits.sum().item():.5f}, max {logits.max().item():.5f}, "
                  f"classes {logits.argmax(-1).tolist()}")


if __name__ == "__main__":
    main()
