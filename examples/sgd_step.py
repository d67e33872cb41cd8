"""A training script whose SGD step is compiled: `torch.compile(opt.step)`, two parameter groups
built from the model's named parameters (weights decayed, biases not), foreach by default.

Shows: Inductor's foreach (combo) kernels, `triton_for_fused_*`, each sub-kernel updating
parameters of one group; a sub-kernel's answer names its group (`param_groups[0]`) and its
parameters (`0.weight`), torch/optim/sgd.py's line and, up the stack, this script's
`step()` line. `--fused` builds SGD with `fused=True` instead. Run it with
`kernelscope run examples/sgd_step.py`.
"""
import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fused", action="store_true", help="SGD(fused=True) instead of foreach")
    fused = parser.parse_args().fused
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8)).to(device)
    named = list(model.named_parameters())
    groups = [{"params": [(name, p) for name, p in named if name.endswith("weight")], "weight_decay": 1e-2},
              {"params": [(name, p) for name, p in named if name.endswith("bias")], "weight_decay": 0.0}]
    opt = torch.optim.SGD(groups, lr=1e-2, momentum=0.9, fused=fused or None, foreach=None if fused else True)
    step = torch.compile(opt.step)
    for _ in range(2):
        loss = model(torch.randn(16, 32, device=device)).pow(2).mean()
        loss.backward()
        step()  # the compiled opt.step()
        opt.zero_grad()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
