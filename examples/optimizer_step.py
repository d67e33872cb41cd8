"""A training script whose optimizer step is compiled: `torch.compile(opt.step)`, AdamW foreach.

Shows: Inductor's foreach (combo) kernels, `triton_for_fused_*`, each sub-kernel computing
one parameter's update; their lines traced to torch/optim/adamw.py's lines and, up the
stack, to this script's `opt.step()` line. Run it with
`kernelscope run examples/optimizer_step.py`.
"""
import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    step = torch.compile(opt.step)
    for _ in range(2):
        loss = model(torch.randn(16, 32, device=device)).pow(2).mean()
        loss.backward()
        step()  # the compiled opt.step()
        opt.zero_grad()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
