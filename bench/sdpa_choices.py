"""Record which attention backend a real CUDA GPU picks for scaled_dot_product_attention.

Run on a machine with an NVIDIA GPU (no compile of Inductor's; a few minutes at most):

    python bench/sdpa_choices.py --out bench/results/sdpa_choices_<gpu>_torch<version>.json
    python bench/sdpa_choices.py --suite --jobs 8 --out ...   # also every call the model suite makes

virtual-cuda cannot ask the GPU, so it decides with a port of ATen's rule
(kernelscope/engine/devices/sdpa_choice.py); tests/engine/devices/test_sdpa_choice.py checks the port
against the tables this script records, each answer being `torch._fused_sdp_choice(...)` as
an `SDPBackend` name:

- `cases`: a grid of (dtype, mask, head size, grad, dropout, grouped-query, layout, sequence
  length) combinations;
- `checks`: calls made to fail or pass one check of the rule each (head sizes that are or are
  not multiples of 4 and 8, masks whose last dimension is not contiguous, masks that need grad
  or have 2 or 3 dimensions, misaligned storage offsets, key length 1, dropout, causal with
  unequal lengths, grouped-query attention, deterministic mode);
- `decompositions`: what the op decomposes into (forward and backward) on this GPU;
- with `--suite`, `suite_calls`: every call the model suite's models make while torch.compile
  captures them (Dynamo's graph, as Inductor receives it; inference under no_grad, training
  with grad), with the backend and the decomposition on this GPU. Dynamo's graph is where the
  calls differ from eager ones: a Hugging Face model builds its attention mask only when
  compiled (eager passes None where the mask is all ones).

Each call is kept as the metadata the rule reads (sizes, strides, dtypes, storage offsets,
requires_grad, dropout, is_causal, enable_gqa, grad mode), so the test rebuilds it on the CPU.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
DTYPES = ["float32", "float16", "bfloat16"]
MASKS = ["none", "causal", "float", "bool", "float_broadcast"]
HEAD_DIMS = [32, 64, 80, 128, 256]
LAYOUTS = ["contiguous", "transposed"]  # transposed: (batch, seq, heads, dim) viewed as (batch, heads, seq, dim)
SEQ_LENS = [32, 33]
BATCH, HEADS, KV_HEADS = 2, 4, 2
# the families whose models call scaled_dot_product_attention (the convnets do not)
SUITE_FAMILIES = ("decoder", "moe", "encoder-decoder", "encoder", "vision-transformer", "diffusion-unet")


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


# -- calls as metadata ---------------------------------------------------------------------


def _concrete(size) -> int:
    """A size as an int: a symbolic one (a graph Dynamo compiled with dynamic shapes) by its
    example value, without adding a guard."""
    node = getattr(size, "node", None)
    return int(node.hint) if node is not None and getattr(node, "hint", None) is not None else int(size)


def tensor_meta(tensor) -> dict:
    return dict(shape=[_concrete(s) for s in tensor.shape], stride=[_concrete(s) for s in tensor.stride()],
                dtype=str(tensor.dtype).removeprefix("torch."), requires_grad=bool(tensor.requires_grad),
                storage_offset=_concrete(tensor.storage_offset()), element_size=tensor.element_size())


def call_meta(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
              grad_enabled=False) -> dict:
    return dict(query=tensor_meta(query), key=tensor_meta(key), value=tensor_meta(value),
                attn_mask=None if attn_mask is None else tensor_meta(attn_mask), dropout=float(dropout_p),
                is_causal=bool(is_causal), scale=None if scale is None else float(scale),
                enable_gqa=bool(enable_gqa), grad_enabled=bool(grad_enabled))


def materialize(torch, meta: dict, device: str):
    """A tensor with exactly `meta`'s sizes, strides, storage offset, dtype and requires_grad."""
    dtype = getattr(torch, meta["dtype"])
    extent = meta["storage_offset"] + 1 + sum((size - 1) * stride for size, stride in zip(meta["shape"], meta["stride"])
                                              if size > 0)
    if dtype == torch.bool:
        storage = torch.rand(extent, device=device) > 0.1
    else:
        storage = torch.randn(extent, device=device, dtype=dtype)
    tensor = storage.as_strided(meta["shape"], meta["stride"], meta["storage_offset"])
    return tensor.requires_grad_(True) if meta["requires_grad"] else tensor


def materialize_call(torch, meta: dict, device: str):
    """(query, key, value, kwargs) of a recorded call."""
    query, key, value = (materialize(torch, meta[name], device) for name in ("query", "key", "value"))
    mask = None if meta["attn_mask"] is None else materialize(torch, meta["attn_mask"], device)
    kwargs = dict(attn_mask=mask, dropout_p=meta["dropout"], is_causal=meta["is_causal"],
                  enable_gqa=meta["enable_gqa"])
    if meta.get("scale") is not None:
        kwargs["scale"] = meta["scale"]
    return query, key, value, kwargs


def backend_name(torch, choice) -> str:
    from torch.nn.attention import SDPBackend

    names = {int(backend): name for name, backend in SDPBackend.__members__.items()}
    return names.get(int(choice), str(choice))


def fused_choice(torch, meta: dict, device: str = "cuda", deterministic: bool = False) -> str:
    query, key, value, kwargs = materialize_call(torch, meta, device)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        with torch.enable_grad() if meta["grad_enabled"] else torch.no_grad():
            return backend_name(torch, torch._fused_sdp_choice(query, key, value, **kwargs))
    finally:
        torch.use_deterministic_algorithms(previous)


def traced_ops(torch, fn, *args) -> list[str]:
    """The ATen calls `fn` decomposes into, in order, as `target(arg kinds)` strings."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn)(*args).graph
    return [str(node.target) for node in graph.nodes if node.op == "call_function"]


def decomposition_of(torch, meta: dict, device: str) -> list[str]:
    """The ops a call decomposes into (forward, and backward where it has grad)."""
    query, key, value, kwargs = materialize_call(torch, meta, device)
    mask = kwargs.pop("attn_mask")
    grad = meta["grad_enabled"] and any(t.requires_grad for t in (query, key, value))

    def forward(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)

    def forward_backward(q, k, v, m):
        inputs = [t for t in (q, k, v) if t.requires_grad]
        return torch.autograd.grad(forward(q, k, v, m).sum(), inputs)

    with torch.enable_grad() if meta["grad_enabled"] else torch.no_grad():
        return traced_ops(torch, forward_backward if grad else forward, query, key, value, mask)


# -- the grid, the checks --------------------------------------------------------------------


DECOMPOSITION_CASES = [
    # (dtype, mask, seq, requires_grad)
    (dtype, mask, seq, grad)
    for dtype in ("float32", "bfloat16")
    for mask in ("none", "causal", "bool", "float", "float_broadcast")
    for seq in (32, 33)
    for grad in (False, True)
]


def _attention(torch, kwargs: dict, grad: bool):
    """scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs) as a function of (q, k, v, m):
    forward only, or forward and the gradients of q, k and v."""

    def forward(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)

    def forward_backward(q, k, v, m):
        out = forward(q, k, v, m)
        return torch.autograd.grad(out.sum(), (q, k, v))

    return forward_backward if grad else forward


def record_decompositions(torch) -> list[dict]:
    """What scaled_dot_product_attention decomposes into on this GPU, forward and backward."""
    results = []
    for dtype, mask, seq, grad in DECOMPOSITION_CASES:
        query, key, value, kwargs = make_case(torch, dtype, mask, 64, grad, 0.0, False, "transposed", seq)
        mask_tensor = kwargs.pop("attn_mask")
        fn = _attention(torch, kwargs, grad)
        with torch.enable_grad() if grad else torch.no_grad():
            ops = traced_ops(torch, fn, query, key, value, mask_tensor)
        results.append(dict(dtype=dtype, mask=mask, seq=seq, requires_grad=grad, ops=ops))
    return results


def _meta(shape, dtype, stride=None, offset=0, grad=False) -> dict:
    if stride is None:
        stride, running = [], 1
        for size in reversed(shape):
            stride.insert(0, running)
            running *= size
    sizes = {"float32": 4, "float16": 2, "bfloat16": 2, "bool": 1}
    return dict(shape=list(shape), stride=list(stride), dtype=dtype, requires_grad=grad, storage_offset=offset,
                element_size=sizes[dtype])


def check_calls() -> list[dict]:
    """Calls that each probe one check of the rule, from a base of (2, 4, 32, head) inputs."""
    calls = []

    def add(name, dtype, head=16, q_len=32, kv_len=32, q_heads=4, kv_heads=4, mask=None, dropout=0.0,
            causal=False, gqa=False, grad=False, q_stride=None, offsets=(0, 0, 0), deterministic=False):
        def qkv(length, heads, offset, stride=None):
            return _meta((2, heads, length, head), dtype, stride, offset, grad)

        meta = dict(query=qkv(q_len, q_heads, offsets[0], q_stride), key=qkv(kv_len, kv_heads, offsets[1]),
                    value=qkv(kv_len, kv_heads, offsets[2]), attn_mask=mask, dropout=dropout, is_causal=causal,
                    scale=None, enable_gqa=gqa, grad_enabled=grad)
        calls.append(dict(name=name, deterministic=deterministic, call=meta))

    for dtype in DTYPES:
        mask_dtype = dtype
        for head in (4, 8, 12, 16, 18, 20, 36, 60, 72, 160, 192, 288):
            for grad in (False, True):
                add(f"head_dim {head}", dtype, head=head, grad=grad)
        # masks: the suite's (BERT's expanded boolean mask, T5's permuted position bias), and shapes
        add("bool mask, last dim expanded (stride 0)", dtype,
            mask=_meta((2, 1, 32, 32), "bool", stride=(0, 32, 1, 0)))
        add("bool mask, batch expanded", dtype, mask=_meta((2, 1, 32, 32), "bool", stride=(0, 1024, 32, 1)))
        add("float mask, permuted (last stride 4)", dtype,
            mask=_meta((2, 4, 32, 32), mask_dtype, stride=(4096, 1, 128, 4)))
        add("float mask needing grad", dtype, mask=_meta((2, 4, 32, 32), mask_dtype, grad=True), grad=True)
        add("float mask needing grad, no grad mode", dtype, mask=_meta((2, 4, 32, 32), mask_dtype, grad=True))
        add("2-d float mask", dtype, mask=_meta((32, 32), mask_dtype))
        add("3-d float mask", dtype, mask=_meta((4, 32, 32), mask_dtype))
        add("float mask of another dtype", dtype, mask=_meta((2, 1, 32, 32), "float32" if dtype != "float32"
                                                                else "bfloat16"))
        # storage offsets (in elements) of q, k, v
        add("key at storage offset 1", dtype, offsets=(0, 1, 0))
        add("key at storage offset 2", dtype, offsets=(0, 2, 0))
        add("query at storage offset 4", dtype, offsets=(4, 0, 0))
        add("query at storage offset 8", dtype, offsets=(8, 0, 0))
        add("query last dim stride 2", dtype, q_stride=(4096, 1024, 32, 2))
        add("key/value length 1", dtype, kv_len=1)
        add("query length 1, dropout", dtype, q_len=1, dropout=0.125)
        add("causal, query 16 key 32", dtype, q_len=16, causal=True)
        add("causal, square", dtype, causal=True)
        for dropout in (0.1, 0.125, 0.5):
            add(f"dropout {dropout}", dtype, dropout=dropout, grad=True)
        add("enable_gqa, equal heads", dtype, gqa=True)
        add("enable_gqa, 4 query heads on 2", dtype, gqa=True, kv_heads=2)
        add("4 query heads on 2, no enable_gqa", dtype, kv_heads=2)
        add("enable_gqa, 4 query heads on 1", dtype, gqa=True, kv_heads=1)
        add("deterministic", dtype, deterministic=True, grad=True)
    return calls


def record_checks(torch) -> list[dict]:
    return [dict(entry, backend=fused_choice(torch, entry["call"], deterministic=entry["deterministic"]))
            for entry in check_calls()]


# -- the model suite's calls --------------------------------------------------------------


def suite_calls_of(model_name: str, train: bool, device: str = "cuda") -> list[dict]:
    """Every scaled_dot_product_attention call of one suite model and mode, from Dynamo's graphs,
    with what this GPU chooses for it and decomposes it into (on the CPU: the calls only)."""
    import importlib

    import torch

    sys.path.insert(0, str(BENCH / "suite"))
    sys.path.insert(0, str(BENCH))
    from suite.registry import BY_NAME

    model_spec = BY_NAME[model_name]
    module = importlib.import_module(model_spec.module)
    torch._dynamo.reset()
    model, inputs = getattr(module, model_spec.factory(train))()
    model = model.to(device)
    inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
    found = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")

    def example(value):
        return value.meta.get("example_value") if isinstance(value, torch.fx.Node) else value

    def backend(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is sdpa:
                arguments = dict(zip(names, (example(a) for a in node.args)))
                arguments.update({k: example(v) for k, v in node.kwargs.items()})
                found.append(call_meta(**arguments, grad_enabled=train))
        return gm.forward

    compiled = torch.compile(model, backend=backend)
    if train:
        compiled(*inputs)
    else:
        with torch.no_grad():
            compiled(*inputs)
    unique = []
    for meta in found:
        if meta not in unique:
            unique.append(meta)
    on_gpu = device == "cuda"
    return [dict(model=model_name, mode="train" if train else "inference", call=meta, count=found.count(meta),
                 backend=fused_choice(torch, meta) if on_gpu else None,
                 ops=decomposition_of(torch, meta, device) if on_gpu else None)
            for meta in unique]


def _suite_job(job):
    name, train = job
    started = time.perf_counter()
    try:
        return name, train, suite_calls_of(name, train), None, round(time.perf_counter() - started, 1)
    except Exception as error:  # noqa: BLE001 - one model's failure is reported, the others go on
        return name, train, [], f"{type(error).__name__}: {str(error).splitlines()[0][:300]}", None


def record_suite(jobs: int, only: list[str] | None) -> tuple[list[dict], list[dict]]:
    import multiprocessing

    sys.path.insert(0, str(BENCH))
    from suite.registry import MODELS

    todo = [(model.name, train) for model in MODELS if model.family in SUITE_FAMILIES
            and (not only or model.name in only) for train in (False, True)]
    calls, failures = [], []
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for name, train, found, error, seconds in pool.imap_unordered(_suite_job, todo):
            mode = "train" if train else "inference"
            print(f"  {name} {mode}: " + (f"ERROR {error}" if error else f"{len(found)} distinct calls, {seconds} s"),
                  flush=True)
            calls.extend(found)
            if error:
                failures.append(dict(model=name, mode=mode, error=error))
    calls.sort(key=lambda c: (c["model"], c["mode"]))
    return calls, failures


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suite", action="store_true", help="also record the model suite's calls")
    parser.add_argument("--only", nargs="*", help="with --suite: these models only")
    parser.add_argument("--jobs", type=int, default=8, help="with --suite: models recorded at once")
    args = parser.parse_args()
    started = time.perf_counter()
    cases = []
    for dtype, mask, head_dim, grad, dropout, gqa, layout, seq in itertools.product(
            DTYPES, MASKS, HEAD_DIMS, [False, True], [0.0, 0.1], [False, True], LAYOUTS, SEQ_LENS):
        query, key, value, kwargs = make_case(torch, dtype, mask, head_dim, grad, dropout, gqa, layout, seq)
        with torch.enable_grad() if grad else torch.no_grad():
            choice = torch._fused_sdp_choice(query, key, value, **kwargs)
        cases.append(dict(dtype=dtype, mask=mask, head_dim=head_dim, requires_grad=grad, dropout=dropout,
                          gqa=gqa, layout=layout, seq=seq, backend=backend_name(torch, choice)))
    capability = torch.cuda.get_device_capability()
    result = dict(torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                  capability=f"{capability[0]}.{capability[1]}", cudnn=torch.backends.cudnn.version(),
                  cases=cases, checks=record_checks(torch), decompositions=record_decompositions(torch))
    if args.suite:
        result["suite_calls"], result["suite_failures"] = record_suite(args.jobs, args.only)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["backend"]] = counts.get(case["backend"], 0) + 1
    print(f"{len(cases)} cases, {len(result['checks'])} checks on {result['gpu']} (sm_{capability[0]}{capability[1]}), "
          f"torch {torch.__version__}, cuDNN {result['cudnn']}: {counts}")
    if args.suite:
        suite_counts: dict[str, int] = {}
        for call in result["suite_calls"]:
            suite_counts[call["backend"]] = suite_counts.get(call["backend"], 0) + call["count"]
        print(f"suite: {len(result['suite_calls'])} distinct calls {suite_counts}, "
              f"{len(result['suite_failures'])} models failed")
    print(f"{time.perf_counter() - started:.0f} s")
    return 1 if args.suite and result["suite_failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
