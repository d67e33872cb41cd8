"""A GPU training program that checkpoints its blocks as torchtitan does, around FlexAttention.

Each block (RMSNorm, q/k/v projections, `flex_attention` with a causal BlockMask, an MLP)
is wrapped by torch's `checkpoint_wrapper` (non-reentrant `torch.utils.checkpoint`), then
compiled on its own, as torchtitan's `apply_ac` and `apply_compile` do:
  --ac full        every activation of a block recomputed in the backward
  --ac selective   a selective-checkpoint policy (`context_fn`): matmuls saved, the rest recomputed
  --ac none        no checkpointing
  --eager-checkpoint  the checkpoint around an eager block whose attention is
                   `torch.compile(flex_attention)` (the checkpoint runs in the program, not in a graph)
Checkpointing changes what is saved, not the values: every mode prints the same losses
(tests/engine/devices/test_checkpointed_programs.py).
"""
import argparse
import functools

import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.nn.attention.flex_attention import create_block_mask, flex_attention
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

HEADS, WIDTH, LENGTH, BATCH = 4, 64, 128, 2
compiled_flex = torch.compile(flex_attention)


def causal(b, h, q, kv):
    return q >= kv


def save_matmuls(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE if op is torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE


class Block(nn.Module):
    def __init__(self, flex):
        super().__init__()
        self.norm = nn.RMSNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.GELU(), nn.Linear(2 * WIDTH, WIDTH))
        self.flex = flex

    def forward(self, x, block_mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        attended = self.flex(q, k, v, block_mask=block_mask).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.out(attended)
        return x + self.mlp(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ac", choices=("full", "selective", "none"), default="selective")
    parser.add_argument("--eager-checkpoint", action="store_true")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = "cuda"
    blocks = nn.ModuleList(Block(compiled_flex if args.eager_checkpoint else flex_attention) for _ in range(2))
    head = nn.Linear(WIDTH, 1)
    for index, block in enumerate(blocks):
        if args.ac == "full":
            block = checkpoint_wrapper(block)
        elif args.ac == "selective":
            block = checkpoint_wrapper(block, context_fn=functools.partial(create_selective_checkpoint_contexts,
                                                                           save_matmuls))
        blocks[index] = block if args.eager_checkpoint else torch.compile(block)
    model = nn.ModuleDict({"blocks": blocks, "head": head}).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    block_mask = create_block_mask(causal, None, None, LENGTH, LENGTH, device=device)
    x = torch.randn(BATCH, LENGTH, WIDTH, device=device)
    target = torch.randn(BATCH, LENGTH, 1, device=device)
    for step in range(args.steps):
        h = x
        for block in model["blocks"]:
            h = block(h, block_mask)
        loss = nn.functional.mse_loss(model["head"](h), target)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.5f} grad norm {norm.item():.5f}")


if __name__ == "__main__":
    main()
