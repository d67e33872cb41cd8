"""A script whose tensors stay on the CPU, for `kernelscope run examples/cpu_script.py`.

Shows: a CPU program's graphs compile to C++ kernels of Inductor's CPU backend, recorded line
by line, under `--target auto` with or without a GPU (docs/targets.md#c-kernels-on-the-cpu).
"""
import torch


def scaled_sigmoid(x):
    return torch.sigmoid(x) * 2


if __name__ == "__main__":
    torch.manual_seed(0)
    print(f"sum {torch.compile(scaled_sigmoid)(torch.randn(64)).sum().item():.4f}")
