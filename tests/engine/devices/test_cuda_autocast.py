"""CUDA's autocast op lists on the virtual GPU (devices/cuda_autocast.py).

The port is compared with the AutocastCUDA kernels of this torch's own dispatcher (registered
on CPU builds too): which ops have one, and what each runs below autocast for sample calls on
fake cuda tensors that carry CUDA's dispatch keys. A function under `torch.autocast("cuda")`
traced on the virtual GPU's CPU-backed fakes gets the graph torch itself traces on
CUDA-keyed fakes; the program's eager values follow CUDA's lists too.
"""
from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from kernelscope.engine import ports  # noqa: E402
from kernelscope.engine.devices import cuda_autocast  # noqa: E402
from kernelscope.engine.devices.cuda_program import cuda_program  # noqa: E402

BF16, F32 = torch.bfloat16, torch.float32


def test_the_port_casts_the_ops_this_torch_gives_an_autocast_cuda_kernel():
    registered = set(cuda_autocast.cuda_kernel_ops()) - set(cuda_autocast.CUDA_BUILD_ONLY)
    ported = {name for name in cuda_autocast.policies() if cuda_autocast.overload(name) is not None}
    assert registered == ported
    assert {"mm", "softmax.int", "layer_norm", "addcmul"} <= ported and "cat" not in ported  # cat: not on CUDA


def more_calls(cuda):
    """Calls beyond the drift check's: the other ops of each list that take plain tensors."""
    x, y, m = cuda((4,), BF16), cuda((4,), F32), cuda((3, 4), BF16)
    target = cuda((3,), torch.int64)
    calls = [(name, (x,), {}) for name in ("acos", "asin", "cosh", "erfinv", "expm1", "log", "log10", "log2",
                                           "log1p", "reciprocal", "rsqrt", "sinh", "tan", "softplus")]
    calls += [(name, (x, y), {}) for name in ("l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
                                              "binary_cross_entropy_with_logits", "dist", "dot", "vdot")]
    calls += [("pow.Tensor_Tensor", (x, x), {}), ("pow.Scalar", (2, x), {}), ("logsumexp", (m, [1]), {}),
              ("group_norm", (cuda((2, 4, 3), BF16), 2), {}), ("rms_norm", (m, [4]), {}),
              ("cumprod", (x, 0), {}), ("prod", (x,), {}), ("prod.dim_int", (m, 1), {}),
              ("linalg_vector_norm", (m,), {}), ("linalg_matrix_norm", (m, 1), {}),
              ("linalg_matrix_norm.str_ord", (m,), {}),
              ("nll_loss2d", (cuda((2, 3, 2, 2), BF16), cuda((2, 2, 2), torch.int64)), {}),
              ("kl_div", (x, y), {}), ("cdist", (m, m), {}), ("cross", (cuda((3, 3), BF16), cuda((3, 3), F32), 1), {}),
              ("matmul", (m, cuda((4, 2), F32)), {}), ("bmm", (cuda((2, 3, 4), F32), cuda((2, 4, 5), F32)), {}),
              ("addmm", (cuda((3,), F32), cuda((3, 4), F32), cuda((4, 3), F32)), {}),
              ("multi_margin_loss", (m, target), {}), ("sum", (m,), {"dtype": torch.float16})]
    return calls


def test_the_port_runs_each_policy_as_the_dispatchers_autocast_cuda_kernels():
    assert ports.autocast_problems() == []
    assert ports.autocast_problems(more_calls) == []


def test_a_policy_gone_wrong_is_found(monkeypatch):
    monkeypatch.setitem(cuda_autocast.POLICIES, "exp", "lower_precision_fp")
    monkeypatch.setitem(cuda_autocast.POLICIES, "softmax.int", "fp32")
    problems = ports.autocast_problems()
    assert len(problems) == 2 and problems[0].startswith("aten::exp(") and "aten::softmax.int(" in problems[1]
    assert next(port for port in ports.PORTS if port.name == "CUDA's autocast op lists").status()[0] == "broken"


@contextlib.contextmanager
def cuda_autocast_switched_on(dtype):
    """Autocast for cuda in a process without a GPU (where `torch.autocast("cuda")` turns
    itself off): torch's own switches, as `torch.autocast` sets them."""
    state = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    try:
        yield
    finally:
        torch.set_autocast_enabled("cuda", state[0])
        torch.set_autocast_dtype("cuda", state[1])


def block_body(x, w, b, scale):
    """A little of everything: a matmul, softmax, layer norm, a cat of mixed dtypes, a promote op."""
    h = torch.softmax(x @ w, dim=-1)
    h = F.layer_norm(torch.cat([h, b.expand_as(h)], dim=-1), (h.shape[-1] * 2,))
    return torch.addcmul(h, h, scale).sum(dim=0)


def block(dtype):
    """`block_body` under autocast to `dtype`, as a program writes it."""
    def under_autocast(x, w, b, scale):
        with torch.autocast("cuda", dtype=dtype):
            return block_body(x, w, b, scale)

    return under_autocast


def traced_ops(gm):
    """(op, argument dtypes, result dtype) of each call, as the graph runs them."""
    ops = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        args = [arg.meta["val"].dtype for arg in node.all_input_nodes if isinstance(arg.meta.get("val"), torch.Tensor)]
        value = node.meta.get("val")
        ops.append((str(node.target), args, value.dtype if isinstance(value, torch.Tensor) else None))
    return ops


def inputs(make, low=BF16):
    return make((4, 8), F32), make((8, 8), F32), make((1, 8), low), make((16,), low)


def traced_as_on_a_gpu(low):
    """`block` under autocast to `low`, traced on the virtual GPU (CPU-backed fake cuda tensors,
    whose C++ keys are the CPU's) and as torch traces it on fake cuda tensors with CUDA's keys,
    where its C++ AutocastCUDA kernels (and C++ composites' device checks) apply; both with the
    Python dispatcher on, as AOTAutograd traces."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode():  # the reference: CUDA's dispatch keys, ATen's own AutocastCUDA kernels
        cuda_inputs = inputs(lambda shape, dtype: torch.empty(shape, dtype=dtype, device="cuda"), low)
        with cuda_autocast_switched_on(low), enable_python_dispatcher():
            reference = traced_ops(make_fx(block_body)(*cuda_inputs))
    with cuda_program():
        program_inputs = inputs(lambda shape, dtype: torch.randn(shape, device="cuda").to(dtype), low)
        with enable_python_dispatcher():
            ours = traced_ops(make_fx(block(low), tracing_mode="fake")(*program_inputs))
    return ours, reference


def test_a_function_under_cuda_autocast_traces_with_a_gpus_casts():
    ours, reference = traced_as_on_a_gpu(BF16)
    assert ours == reference
    # what that is: the matmul in bf16, softmax and layer norm in fp32, no cast before the cat
    # (CUDA has no promote for cat; the CPU's lists would cast), addcmul promoted to fp32
    assert ("aten.mm.default", [BF16, BF16], BF16) in ours
    assert ("aten._softmax.default", [F32], F32) in ours
    assert next(op for op in ours if op[0] == "aten.cat.default")[1] == [F32, BF16]
    assert ("aten.native_layer_norm.default", [F32], None) in ours  # (its three results)
    assert ours[-3:] == [("aten._to_copy.default", [BF16], F32),  # the bf16 scale, promoted
                         ("aten.addcmul.default", [F32, F32], F32), ("aten.sum.dim_IntList", [F32], F32)]


def test_fp16_autocast_traces_softmax_as_one_fp16_to_fp32_kernel():
    """A float16 softmax told float32 is `_softmax(x, dim, half_to_float=True)` on a GPU (ATen's
    composite asks the C++ device; cuda_softmax answers as a CUDA build)."""
    ours, reference = traced_as_on_a_gpu(torch.float16)
    assert ours == reference
    assert ("aten._softmax.default", [torch.float16], F32) in ours


@pytest.mark.parametrize("where", ["around", "inside"])
def test_dynamo_and_aot_autograd_trace_the_gpus_policy(where):
    """Autocast around the compiled region or inside it. AOTAutograd traces the backward under
    the ambient autocast (`backward_pass_autocast="same_as_forward"`): around the region, a bias
    gradient's `sum` is told fp32 as on a GPU (the CPU's lists sum in bf16 and cast); inside it,
    the backward runs without autocast, on a GPU too."""
    from torch._functorch import config as functorch_config
    from torch._functorch.aot_autograd import aot_module_simplified

    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def backend(gm, example_inputs):
        with functorch_config.patch(force_non_lazy_backward_lowering=True):
            aot_module_simplified(gm, example_inputs, fw_compiler=keep, bw_compiler=keep)
        return gm.forward

    def inside(x):
        with torch.autocast("cuda", dtype=BF16):
            return torch.softmax(linear(x), -1)

    with cuda_program() as notes:
        linear = torch.nn.Linear(8, 8).to("cuda")
        x = torch.randn(4, 8, device="cuda")
        if where == "around":
            with torch.autocast("cuda", dtype=BF16):
                out = torch.compile(lambda x: torch.softmax(linear(x), -1), backend=backend)(x)
        else:
            out = torch.compile(inside, backend=backend)(x)
        assert out.dtype == F32
    forward, backward = (traced_ops(gm) for gm in graphs)
    assert ("aten.addmm.default", [BF16, BF16, BF16], BF16) in forward
    assert ("aten._softmax.default", [F32], F32) in forward
    bias_gradient = F32 if where == "around" else BF16
    assert ("aten.sum.dim_IntList", [BF16], bias_gradient) in backward
    assert notes == []


def test_the_programs_eager_values_follow_cudas_lists():
    with cuda_program() as notes:
        x, w = torch.randn(4, 8, device="cuda"), torch.randn(8, 8, device="cuda")
        target = torch.randint(0, 8, (4,), device="cuda")
        with torch.autocast("cuda", dtype=BF16):
            assert not torch.is_autocast_enabled("cpu")
            h = x @ w
            assert h.dtype == BF16 and h.device.type == "cuda"
            assert torch.softmax(h, -1).dtype == F32 and F.layer_norm(h, (8,)).dtype == F32
            assert h.sum().dtype == F32 and h.exp().dtype == F32 and h.relu().dtype == BF16
            assert torch.cat([h, x]).dtype == F32  # cat's own type promotion, as on a GPU
            # cross_entropy's C++ composite hands its log-softmax to nll_loss: fp32 as on a GPU
            assert F.cross_entropy(h, target).dtype == F32
            assert torch.allclose(torch.softmax(h, -1), torch.softmax(h.float(), -1))
            with pytest.raises(RuntimeError, match="unsafe to autocast"):
                F.binary_cross_entropy(torch.sigmoid(x), torch.rand(4, 8, device="cuda"))
            plain = torch.randn(4, 8)  # a CPU tensor of the program: not the GPU's autocast
            assert (plain @ plain.T).dtype == F32 and plain.to(BF16).exp().dtype == BF16
            assert F.binary_cross_entropy(torch.sigmoid(plain), torch.rand(4, 8)).dtype == F32  # not refused
        assert (x @ w).dtype == F32 and torch.softmax(h, -1).dtype == BF16
    assert notes == []
    assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == F32  # and nothing stays behind
    assert not torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.AutocastCUDA)


def test_an_op_whose_kernel_the_port_lacks_runs_uncast_and_the_run_says_so(monkeypatch):
    """As on a torch newer than the table: the op has an AutocastCUDA kernel, the port no policy."""
    monkeypatch.delitem(cuda_autocast.POLICIES, "exp")
    with cuda_program() as notes:
        h = torch.randn(4, device="cuda").to(BF16)
        with torch.autocast("cuda", dtype=BF16):
            assert h.exp().dtype == BF16 and h.log().dtype == F32
    assert notes == [cuda_autocast.NOT_PORTED_NOTE.format(op="aten.exp.default")]
