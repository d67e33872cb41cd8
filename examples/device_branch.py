"""A GPU script whose compiled function branches on `x.device.type`, for
`kernelscope run examples/device_branch.py`.

Code written for several devices often picks an implementation by the tensor's device
(`if x.device.type == "cuda"`). On a GPU the compiled graph holds the cuda branch; under
virtual-cuda the script sees a CUDA device, so its recorded graph holds that branch too
(the sigmoid gate, never the CPU's tanh).
"""
import torch


def gate(x: torch.Tensor) -> torch.Tensor:
    if x.device.type == "cuda":
        return x * torch.sigmoid(x)  # the GPU's branch
    return torch.tanh(x)  # the CPU's branch


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(8, 64, device=device)
    out = torch.compile(gate)(x)
    print(f"{out.device.type} branch: mean {out.mean().item():.4f}")


if __name__ == "__main__":
    main()
