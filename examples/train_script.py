"""An ordinary training script that calls torch.compile itself, for
`kernelscope run examples/train_script.py -- --steps 2`.

Shows: recording an unmodified script (every graph it compiles, forward and
backward), and a recompile: the last step feeds a different batch size, so
Dynamo's shape guard fails and the graph is compiled again with a dynamic batch.
"""
import argparse

import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.tanh(self.fc(x)).pow(2).mean()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = TinyNet()
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for index in range(args.steps):
        batch = 8 if index < args.steps - 1 else 4
        loss = step(torch.randn(batch, 16))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
