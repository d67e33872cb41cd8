"""What running a program on the virtual GPU costs: its eager part, against the same program on the CPU.

`python bench/virtual_cuda_program.py` runs one eager training loop (no torch.compile) twice
in this process, alternating, several rounds: plainly on the CPU (`device="cpu"`), and as a
GPU program under virtual-cuda's program context (`device="cuda"` inside
`cuda_program()`, what `kernelscope run` puts a script in). It prints each model's median
time per step on both sides and their ratio, measured in the same run (target: ≤ 1.5×).
Times are CPU seconds of this process (`time.process_time`, torch on one thread): on a
machine shared with other work they vary less than wall time.

The models are small, realistic training steps (a transformer language model at two sizes,
a convolutional classifier), each step forward, backward, AdamW and zero_grad (AdamW's
foreach path on both sides: a GPU program takes it by default, a CPU one does not, and the
bench measures the program context, not that choice);
`--tiny` adds a model of tiny ops, where the per-call cost of the program mode shows most.
`--floor` adds a column: the CPU program under a torch-function mode that only calls through
(`_CallThrough`), the least any design with one Python layer per torch call costs, so the
program mode's own share is the gap between that column and virtual-cuda's.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _models():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            batch, length, dim = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
            q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True)
                              .transpose(1, 2).reshape(batch, length, dim))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class LM(nn.Module):
        def __init__(self, dim, layers, vocab=1024, heads=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
            self.head = nn.Linear(dim, vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    def lm(dim, layers, batch, length):
        def make(device):
            model = LM(dim, layers).to(device)
            tokens = torch.randint(0, 1024, (batch, length + 1), device=device)

            def loss():
                logits = model(tokens[:, :-1])
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))

            return model, loss
        return make

    def cnn(device):
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(device)
        images = torch.randn(32, 3, 32, 32, device=device)
        labels = torch.randint(0, 10, (32,), device=device)
        return model, lambda: F.cross_entropy(model(images), labels)

    def tiny(device):
        model = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(8)]).to(device)
        x = torch.randn(4, 16, device=device)
        return model, lambda: model(x).pow(2).mean()

    return {
        "lm d256 x4 (b8 t128)": lm(256, 4, 8, 128),
        "lm d512 x2 (b4 t256)": lm(512, 2, 4, 256),
        "cnn 32x32 (b32)": cnn,
        "tiny ops (d16 x8)": tiny,
    }


def _call_through_mode():
    """A torch-function mode that does nothing but call (the floor `--floor` measures)."""
    from torch.overrides import TorchFunctionMode

    class _CallThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return _CallThrough()


def _time_steps(make, device: str, steps: int) -> float:
    """CPU seconds per training step (after two warm-up steps)."""
    import torch

    torch.manual_seed(0)
    model, loss_of = make(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)  # the same path on both sides

    def step():
        loss = loss_of()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    for _ in range(2):  # warm-up: the allocator's first steps
        step()
    started = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - started) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per model (median taken)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--tiny", action="store_true", help="also the model of tiny ops")
    parser.add_argument("--only", help="only the models whose name starts with this (e.g. tiny)")
    parser.add_argument("--floor", action="store_true",
                        help="also the CPU program under a torch-function mode that only calls through")
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads (default 1: steadier on a "
                                                                "shared machine)")
    args = parser.parse_args()

    import torch

    from kernelscope.engine.devices.cuda_program import cuda_program

    torch.set_num_threads(args.threads)
    models = {name: make for name, make in _models().items()
              if (args.tiny or args.only or not name.startswith("tiny")) and name.startswith(args.only or "")}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.rounds} rounds x {args.steps} "
          "steps, median CPU seconds per training step (forward, backward, AdamW, zero_grad)\n")
    floor_head = (" mode that only calls through |", "---|") if args.floor else ("", "")
    print(f"| model | CPU program |{floor_head[0]} under virtual-cuda | ratio |\n|---|---|{floor_head[1]}---|---|")
    ratios = []
    for name, make in models.items():
        plain, floor, virtual = [], [], []
        for _ in range(args.rounds):
            plain.append(_time_steps(make, "cpu", args.steps))
            if args.floor:
                with _call_through_mode():
                    floor.append(_time_steps(make, "cpu", args.steps))
            with cuda_program():
                virtual.append(_time_steps(make, "cuda", args.steps))
        base = statistics.median(plain)
        ratio = statistics.median(virtual) / base
        if not name.startswith("tiny"):
            ratios.append(ratio)
        floor_cell = f" {1000 * statistics.median(floor):.1f} ms ({statistics.median(floor) / base:.2f}x) |" \
            if args.floor else ""
        print(f"| {name} | {1000 * base:.1f} ms |{floor_cell} {1000 * statistics.median(virtual):.1f} ms "
              f"| {ratio:.2f}x |", flush=True)
    if ratios:
        print(f"\nworst ratio over the realistic models: {max(ratios):.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
