"""A script that recompiles because of one shape test, for
`kernelscope run examples/recompile_shape.py`.

Shows: guards and recompiles at the source line that caused them (docs/why.md).
The first call compiles for batch 2 (static shapes). The second, batch 3, fails the
size guard: Dynamo recompiles with a dynamic batch `n`, and the branch `if n > 4:`
installs the guard `n <= 4`. The third call, batch 8, fails that guard and compiles
a third time. `kernelscope query examples/recompile_shape.py:23 --json` answers with
the guard and both recompiles it is part of.
"""
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        n = x.shape[0]
        h = torch.relu(self.fc(x))
        if n > 4:
            h = h * 2
        else:
            h = h - 1
        return h.sum(dim=1)


def main() -> None:
    torch.manual_seed(0)
    model = torch.compile(Head())
    for batch in (2, 3, 8):
        out = model(torch.randn(batch, 16))
    print(f"last output {out.shape}")


if __name__ == "__main__":
    main()
