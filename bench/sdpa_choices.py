"""Record which attention backend a real CUDA GPU picks for scaled_dot_product_attention.

Run on a machine with an NVIDIA GPU:

    python bench/sdpa_choices.py --out bench/results/sdpa_choices_<gpu>_torch<version>.json

virtual-cuda cannot ask the GPU, so it decides with a rule
(kernelscope/engine/devices/sdpa_choice.py); tests/test_sdpa_choice.py checks that rule
against the table this script records. Each case is a (dtype, mask, head size, grad,
dropout, grouped-query, layout, sequence length) combination; the answer is
`torch._fused_sdp_choice(...)` as an `SDPBackend` name.
"""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

DTYPES = ["float32", "float16", "bfloat16"]
MASKS = ["none", "causal", "float", "bool", "float_broadcast"]
HEAD_DIMS = [32, 64, 80, 128, 256]
LAYOUTS = ["contiguous", "transposed"]  # transposed: (batch, seq, heads, dim) viewed as (batch, heads, seq, dim)
SEQ_LENS = [32, 33]
BATCH, HEADS, KV_HEADS = 2, 4, 2


def make_case(torch, dtype, mask, head_dim, grad, dropout, gqa, layout, seq, device="cuda"):
    dtype = getattr(torch, dtype)
    kv_heads = KV_HEADS if gqa else HEADS

    def tensor(heads):
        if layout == "contiguous":
            t = torch.randn(BATCH, heads, seq, head_dim, device=device, dtype=dtype)
        else:
            t = torch.randn(BATCH, seq, heads, head_dim, device=device, dtype=dtype).transpose(1, 2)
        return t.requires_grad_(grad)

    query, key, value = tensor(HEADS), tensor(kv_heads), tensor(kv_heads)
    attn_mask = None
    if mask == "float":
        attn_mask = torch.randn(BATCH, 1, seq, seq, device=device, dtype=dtype)
    elif mask == "bool":
        attn_mask = torch.rand(BATCH, 1, seq, seq, device=device) > 0.1
    elif mask == "float_broadcast":
        attn_mask = torch.randn(1, 1, seq, seq, device=device, dtype=dtype)
    return query, key, value, dict(attn_mask=attn_mask, dropout_p=dropout, is_causal=mask == "causal",
                                   enable_gqa=gqa)


DECOMPOSITION_CASES = [
    # (dtype, mask, seq, requires_grad)
    (dtype, mask, seq, grad)
    for dtype in ("float32", "bfloat16")
    for mask in ("none", "causal", "bool", "float", "float_broadcast")
    for seq in (32, 33)
    for grad in (False, True)
]


def traced_ops(torch, fn, *args) -> list[str]:
    """The ATen calls `fn` decomposes into, in order, as `target(arg kinds)` strings."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn)(*args).graph
    return [str(node.target) for node in graph.nodes if node.op == "call_function"]


def record_decompositions(torch) -> list[dict]:
    """What scaled_dot_product_attention decomposes into on this GPU, forward and backward."""
    results = []
    for dtype, mask, seq, grad in DECOMPOSITION_CASES:
        query, key, value, kwargs = make_case(torch, dtype, mask, 64, grad, 0.0, False, "transposed", seq)
        mask_tensor = kwargs.pop("attn_mask")

        def forward(q, k, v, m):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)

        def forward_backward(q, k, v, m):
            out = forward(q, k, v, m)
            return torch.autograd.grad(out.sum(), (q, k, v))

        fn = forward_backward if grad else forward
        with torch.enable_grad() if grad else torch.no_grad():
            ops = traced_ops(torch, fn, query, key, value, mask_tensor)
        results.append(dict(dtype=dtype, mask=mask, seq=seq, requires_grad=grad, ops=ops))
    return results


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    names = {int(backend): name for name, backend in SDPBackend.__members__.items()}
    cases = []
    for dtype, mask, head_dim, grad, dropout, gqa, layout, seq in itertools.product(
            DTYPES, MASKS, HEAD_DIMS, [False, True], [0.0, 0.1], [False, True], LAYOUTS, SEQ_LENS):
        query, key, value, kwargs = make_case(torch, dtype, mask, head_dim, grad, dropout, gqa, layout, seq)
        with torch.enable_grad() if grad else torch.no_grad():
            choice = torch._fused_sdp_choice(query, key, value, **kwargs)
        cases.append(dict(dtype=dtype, mask=mask, head_dim=head_dim, requires_grad=grad, dropout=dropout,
                          gqa=gqa, layout=layout, seq=seq, backend=names.get(choice, str(choice))))
    decompositions = record_decompositions(torch)
    capability = torch.cuda.get_device_capability()
    result = dict(torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                  capability=f"{capability[0]}.{capability[1]}",
                  cudnn=torch.backends.cudnn.version(), cases=cases, decompositions=decompositions)
    args.out.write_text(json.dumps(result, indent=1))
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["backend"]] = counts.get(case["backend"], 0) + 1
    print(f"{len(cases)} cases on {result['gpu']} (sm_{capability[0]}{capability[1]}), torch {torch.__version__}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
