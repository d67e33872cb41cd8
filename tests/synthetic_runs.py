"""Small but realistic RunRecords, shaped like a train-mode compile of a 2-layer MLP.

`make_mlp_run(workspace)` writes `examples/mlp.py` into `workspace` and returns
the record the engine would hand to the store: a forward and a backward graph
(compile id 0/0), a fused Triton GELU kernel per graph with lines mapped to
post-grad nodes, extern addmm/mm calls, wrapper lines, a node whose source is
a library file outside the workspace, a graph break and a recompile.

The line numbers below are the ones tests assert on.
"""
from __future__ import annotations

from pathlib import Path

from kernelscope.run_record import (
    FxNode,
    GraphBreak,
    GraphRecord,
    Guard,
    GuardFailure,
    Kernel,
    LineOrigin,
    NotFused,
    PassStep,
    Recompile,
    RunRecord,
    SourceLocation,
)

MLP_PATH = "examples/mlp.py"
MLP_SOURCE = '''\
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32)

    def forward(self, x):
        h = self.fc1(x)
        h = torch.nn.functional.gelu(h)
        return self.fc2(h)


def make():
    return MLP(), (torch.randn(8, 32),)
'''
FC1_LINE, GELU_LINE, FC2_LINE, MAKE_LINE = 12, 13, 14, 18
LIBRARY_FILE = "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py"
LIBRARY_LINE = 125

# The generated texts below keep Inductor's one-line signatures and calls: a `\` at a line's
# end continues that line (the text holds no `\` and no line break there).
FW_PRE_GRAD = '''\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[8, 32]", L_self_fc1_weight: "f32[64, 32]", L_self_fc1_bias: "f32[64]", \
L_self_fc2_weight: "f32[32, 64]", L_self_fc2_bias: "f32[32]"):
        l_x_ = L_x_
        linear = torch._C._nn.linear(l_x_, L_self_fc1_weight, L_self_fc1_bias)
        h_1 = torch._C._nn.gelu(linear)
        linear_1 = torch._C._nn.linear(h_1, L_self_fc2_weight, L_self_fc2_bias)
        return (linear_1,)
'''

FW_POST_GRAD = '''\
class <lambda>(torch.nn.Module):
    def forward(self, primals_1: "f32[64, 32]", primals_2: "f32[64]", primals_3: "f32[8, 32]", \
primals_4: "f32[32, 64]", primals_5: "f32[32]"):
        permute: "f32[32, 64]" = torch.ops.aten.permute.default(primals_1, [1, 0])
        addmm: "f32[8, 64]" = torch.ops.aten.addmm.default(primals_2, primals_3, permute)
        mul: "f32[8, 64]" = torch.ops.aten.mul.Tensor(addmm, 0.5)
        mul_1: "f32[8, 64]" = torch.ops.aten.mul.Tensor(addmm, 0.7071067811865476)
        erf: "f32[8, 64]" = torch.ops.aten.erf.default(mul_1)
        add: "f32[8, 64]" = torch.ops.aten.add.Tensor(erf, 1)
        mul_2: "f32[8, 64]" = torch.ops.aten.mul.Tensor(mul, add)
        permute_1: "f32[64, 32]" = torch.ops.aten.permute.default(primals_4, [1, 0])
        addmm_1: "f32[8, 32]" = torch.ops.aten.addmm.default(primals_5, mul_2, permute_1)
        return (addmm_1, primals_3, addmm, mul_2, permute_1)
'''

FW_GELU_KERNEL = '''\
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers

@triton.jit
def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xnumel = 512
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = 0.5
    tmp2 = tmp0 * tmp1
    tmp3 = 0.7071067811865476
    tmp4 = tmp0 * tmp3
    tmp5 = libdevice.erf(tmp4)
    tmp6 = 1.0
    tmp7 = tmp5 + tmp6
    tmp8 = tmp2 * tmp7
    tl.store(out_ptr0 + (x0), tmp8, xmask)
'''

FW_WRAPPER = '''\
from torch._inductor.runtime import triton_helpers

def call(args):
    primals_1, primals_2, primals_3, primals_4, primals_5 = args
    args.clear()
    assert_size_stride(primals_1, (64, 32), (32, 1))
    buf0 = empty_strided_cuda((8, 64), (64, 1), torch.float32)
    extern_kernels.addmm(primals_2, primals_3, reinterpret_tensor(primals_1, (32, 64), (1, 32), 0), \
alpha=1, beta=1, out=buf0)
    del primals_2
    buf1 = empty_strided_cuda((8, 64), (64, 1), torch.float32)
    triton_poi_fused_gelu_0.run(buf0, buf1, 512, stream=stream0)
    buf2 = empty_strided_cuda((8, 32), (32, 1), torch.float32)
    extern_kernels.addmm(primals_5, buf1, reinterpret_tensor(primals_4, (64, 32), (1, 64), 0), \
alpha=1, beta=1, out=buf2)
    del primals_5
    return (buf2, primals_3, buf0, buf1, reinterpret_tensor(primals_4, (64, 32), (1, 64), 0), )
'''

BW_POST_GRAD = '''\
class GraphModule(torch.nn.Module):
    def forward(self, primals_3: "f32[8, 32]", addmm: "f32[8, 64]", mul_2: "f32[8, 64]", permute_1: "f32[64, 32]", \
tangents_1: "f32[8, 32]"):
        permute_2: "f32[32, 64]" = torch.ops.aten.permute.default(permute_1, [1, 0])
        mm: "f32[8, 64]" = torch.ops.aten.mm.default(tangents_1, permute_2)
        mul_3: "f32[8, 64]" = torch.ops.aten.mul.Tensor(addmm, 0.7071067811865476)
        erf_1: "f32[8, 64]" = torch.ops.aten.erf.default(mul_3)
        add_1: "f32[8, 64]" = torch.ops.aten.add.Tensor(erf_1, 1)
        mul_4: "f32[8, 64]" = torch.ops.aten.mul.Tensor(add_1, 0.5)
        mul_5: "f32[8, 64]" = torch.ops.aten.mul.Tensor(mm, mul_4)
        return (mul_5,)
'''

BW_GELU_KERNEL = '''\
import triton
import triton.language as tl

@triton.jit
def triton_poi_fused_gelu_gelu_backward_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK: tl.constexpr):
    xnumel = 512
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), None)
    tmp1 = tl.load(in_ptr0 + (x0), None)
    tmp2 = 0.7071067811865476
    tmp3 = tmp1 * tmp2
    tmp4 = libdevice.erf(tmp3)
    tmp5 = 1.0
    tmp6 = tmp4 + tmp5
    tmp7 = 0.5
    tmp8 = tmp6 * tmp7
    tmp9 = tmp0 * tmp8
    tl.store(in_out_ptr0 + (x0), tmp9, None)
'''

BW_WRAPPER = '''\
def call(args):
    primals_3, addmm, mul_2, permute_1, tangents_1 = args
    args.clear()
    buf0 = empty_strided_cuda((8, 64), (64, 1), torch.float32)
    extern_kernels.mm(tangents_1, permute_1, out=buf0)
    del permute_1
    buf1 = buf0; del buf0  # reuse
    triton_poi_fused_gelu_gelu_backward_0.run(buf1, addmm, 512, stream=stream0)
    del addmm
    return (buf1, )
'''

FW_GELU_NODES = ["mul", "mul_1", "erf", "add", "mul_2"]
BW_GELU_NODES = ["mul_3", "erf_1", "add_1", "mul_4", "mul_5"]


def origins(text: str, mapping: list[tuple[int, list[str], str]]) -> list[LineOrigin]:
    """LineOrigins for (line, nodes, reason) triples, with the text taken from `text`."""
    lines = text.splitlines()
    return [LineOrigin(line=line, text=lines[line - 1], nodes=nodes, reason=reason) for line, nodes, reason in mapping]


def _user(workspace: Path, line: int) -> SourceLocation:
    code = MLP_SOURCE.splitlines()[line - 1].strip()
    function = "make" if line >= MAKE_LINE - 1 else "forward"
    return SourceLocation(file=str(workspace / MLP_PATH), line=line, function=function, code=code)


def _placeholders(names: list[str]) -> list[FxNode]:
    return [FxNode(name=name, op="placeholder", target=name, graph_line=2) for name in names]


def forward_graph(workspace: Path) -> GraphRecord:
    def user(line):
        return _user(workspace, line)

    library = SourceLocation(file=LIBRARY_FILE, line=LIBRARY_LINE, function="forward",
                             code="return F.linear(input, self.weight, self.bias)")
    pre_nodes = [
        FxNode("L_x_", "placeholder", "L_x_", graph_line=2),
        FxNode("l_x_", "placeholder", "l_x_", graph_line=3),
        FxNode("linear", "call_function", "torch._C._nn.linear", user(FC1_LINE), "stack_trace", 4),
        FxNode("h_1", "call_function", "torch._C._nn.gelu", user(GELU_LINE), "stack_trace", 5),
        FxNode("linear_1", "call_function", "torch._C._nn.linear", user(FC2_LINE), "stack_trace", 6),
        FxNode("output", "output", "output", graph_line=7),
    ]
    post_nodes = _placeholders([f"primals_{i}" for i in range(1, 6)]) + [
        FxNode("permute", "call_function", "aten.permute.default", library, "stack_trace", 3, ["linear"]),
        FxNode("addmm", "call_function", "aten.addmm.default", user(FC1_LINE), "stack_trace", 4, ["linear"]),
        FxNode("mul", "call_function", "aten.mul.Tensor", user(GELU_LINE), "stack_trace", 5, ["h_1"]),
        FxNode("mul_1", "call_function", "aten.mul.Tensor", user(GELU_LINE), "stack_trace", 6, ["h_1"]),
        FxNode("erf", "call_function", "aten.erf.default", user(GELU_LINE), "stack_trace", 7, ["h_1"]),
        FxNode("add", "call_function", "aten.add.Tensor", user(GELU_LINE), "stack_trace", 8, ["h_1"]),
        FxNode("mul_2", "call_function", "aten.mul.Tensor", user(GELU_LINE), "stack_trace", 9, ["h_1"]),
        FxNode("permute_1", "call_function", "aten.permute.default", user(FC2_LINE), "stack_trace", 10, ["linear_1"]),
        FxNode("addmm_1", "call_function", "aten.addmm.default", user(FC2_LINE), "stack_trace", 11, ["linear_1"]),
        FxNode("output", "output", "output", graph_line=12),
    ]
    gelu = Kernel(
        name="triton_poi_fused_gelu_0",
        kind="triton",
        source=FW_GELU_KERNEL,
        nodes=list(FW_GELU_NODES),
        lines=origins(FW_GELU_KERNEL, [
            (8, [], "indexing"),
            (12, ["mul", "mul_1"], "loads for"),
            (14, ["mul"], "computes"),
            (16, ["mul_1"], "computes"),
            (17, ["erf"], "computes"),
            (19, ["add"], "computes"),
            (20, ["mul_2"], "computes"),
            (21, ["mul_2"], "stores"),
        ]),
        inductor_nodes=["add", "erf", "mul", "mul_1", "mul_2"],
        wrapper_lines=[11],
    )
    fc1 = Kernel(name="extern_kernels.addmm", kind="extern", source="", nodes=["permute", "addmm"],
                 inductor_nodes=["addmm", "permute"], wrapper_lines=[8])
    fc2 = Kernel(name="extern_kernels.addmm", kind="extern", source="", nodes=["permute_1", "addmm_1"],
                 inductor_nodes=["addmm_1", "permute_1"], wrapper_lines=[13])
    return GraphRecord(
        frame_id=0,
        frame_compile_id=0,
        attempt=0,
        kind="forward",
        pre_grad_text=FW_PRE_GRAD,
        post_grad_text=FW_POST_GRAD,
        wrapper_text=FW_WRAPPER,
        pre_grad_nodes=pre_nodes,
        post_grad_nodes=post_nodes,
        kernels=[fc1, gelu, fc2],
        wrapper_lines=origins(FW_WRAPPER, [
            (7, ["addmm"], "allocates for"),
            (8, ["addmm", "permute"], "calls extern kernel"),
            (9, ["addmm"], "frees after"),
            (10, ["mul_2"], "allocates for"),
            (11, FW_GELU_NODES, "launches kernel"),
            (12, ["addmm_1"], "allocates for"),
            (13, ["addmm_1", "permute_1"], "calls extern kernel"),
        ]),
        wrapper_attributable=8,
        inductor_mapping={"preToPost": {"h_1": FW_GELU_NODES, "linear": ["addmm", "permute"]},
                          "postToCppCode": {"triton_poi_fused_gelu_0": FW_GELU_NODES}},
    )


def backward_graph(workspace: Path) -> GraphRecord:
    def user(line):
        return _user(workspace, line)

    post_nodes = _placeholders(["primals_3", "addmm", "mul_2", "permute_1", "tangents_1"]) + [
        FxNode("permute_2", "call_function", "aten.permute.default", user(FC2_LINE), "forward seq_nr", 3, ["linear_1"]),
        FxNode("mm", "call_function", "aten.mm.default", user(FC2_LINE), "forward seq_nr", 4, ["linear_1"]),
        FxNode("mul_3", "call_function", "aten.mul.Tensor", user(GELU_LINE), "forward seq_nr", 5, ["h_1"]),
        FxNode("erf_1", "call_function", "aten.erf.default", user(GELU_LINE), "forward seq_nr", 6, ["h_1"]),
        FxNode("add_1", "call_function", "aten.add.Tensor", user(GELU_LINE), "forward seq_nr", 7, ["h_1"]),
        FxNode("mul_4", "call_function", "aten.mul.Tensor", None, "", 8, []),
        FxNode("mul_5", "call_function", "aten.mul.Tensor", user(GELU_LINE), "forward seq_nr", 9, ["h_1"]),
        FxNode("output", "output", "output", graph_line=10),
    ]
    gelu_backward = Kernel(
        name="triton_poi_fused_gelu_gelu_backward_0",
        kind="triton",
        source=BW_GELU_KERNEL,
        nodes=list(BW_GELU_NODES),
        lines=origins(BW_GELU_KERNEL, [
            (10, ["mul_5"], "loads for"),
            (11, ["mul_3"], "loads for"),
            (13, ["mul_3"], "computes"),
            (14, ["erf_1"], "computes"),
            (16, ["add_1"], "computes"),
            (18, ["mul_4"], "computes"),
            (19, ["mul_5"], "computes"),
            (20, ["mul_5"], "stores"),
        ]),
        inductor_nodes=None,  # Inductor records no node mapping for backward graphs
        wrapper_lines=[8],
    )
    mm = Kernel(name="extern_kernels.mm", kind="extern", source="", nodes=["permute_2", "mm"],
                inductor_nodes=None, wrapper_lines=[5])
    return GraphRecord(
        frame_id=0,
        frame_compile_id=0,
        attempt=0,
        kind="backward",
        post_grad_text=BW_POST_GRAD,
        wrapper_text=BW_WRAPPER,
        post_grad_nodes=post_nodes,
        kernels=[mm, gelu_backward],
        wrapper_lines=origins(BW_WRAPPER, [
            (4, ["mm"], "allocates for"),
            (5, ["mm", "permute_2"], "calls extern kernel"),
            (7, ["mul_5"], "reuses buffer for"),
            (8, BW_GELU_NODES, "launches kernel"),
        ]),
        wrapper_attributable=4,
    )


def make_mlp_run(workspace: Path, created: float = 1_763_800_000.0) -> RunRecord:
    """The record of `kernelscope compile examples/mlp.py:make --mode train`."""
    source = workspace / MLP_PATH
    source.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_file() or source.read_text() != MLP_SOURCE:  # concurrent writers and readers share it
        source.write_text(MLP_SOURCE)
    forward = forward_graph(workspace)
    # Whole-stack provenance on one node: called from make()'s line, inside module fc1,
    # and rewritten by a pass.
    first_op = next(node for node in forward.post_grad_nodes if node.op == "call_function")
    first_op.stack = [_user(workspace, MAKE_LINE), first_op.source]
    first_op.module_path, first_op.module_class = "fc1", "torch.nn.modules.linear.Linear"
    first_op.lineage = [PassStep("pattern_matcher", "replace", "view_3")]
    return RunRecord(
        target=f"{MLP_PATH}:make",
        device="virtual-cuda",
        mode="train",
        dynamic=False,
        torch_version="2.13.0",
        triton_version="3.7.1",
        provenance="line",
        created=created,
        workspace=str(workspace),
        graphs=[forward, backward_graph(workspace)],
        graph_breaks=[GraphBreak(reason="torch.randn outside the compiled region", source=_user(workspace, MAKE_LINE),
                                 compile_id="0/0", explanation="Dynamo does not trace this call.",
                                 hints=["Set `torch._dynamo.config.capture_scalar_outputs = True`."],
                                 url="https://example.invalid/gb0124.html",
                                 stack=[_user(workspace, MAKE_LINE)])],
        recompiles=[Recompile(compile_id="0/1",
                              reason="tensor 'L['x']' size mismatch at index 0. expected 8, actual 16")],
        warnings=["FX graph cache bypassed for recorded graphs"],
        timings={"compile_s": 2.5, "capture_s": 0.25},
        peak_memory_mb=12.5,
        execute_max_error=None,
        config={"max_autotune": False},
    )


def make_why_run(workspace: Path) -> RunRecord:
    """The mlp run with what docs/why.md records: a shape guard at the fc1 line (from user
    code), one Inductor added, the recompile it failed (with the value and lines) and a
    fusion the scheduler refused between fc1's addmm and gelu."""
    record = make_mlp_run(workspace)
    fc1, gelu = _user(workspace, FC1_LINE), _user(workspace, GELU_LINE)
    record.guards = [
        Guard("0/1", "shape", "x.size()[0] <= 16", raw="s0 <= 16", symbols={"s0": "x.size()[0]"},
              added_by="user code", source=fc1, source_via="guard", stack=[fc1]),
        Guard("0/1", "shape", "x.size()[0] <= 2147483647", raw="s0 <= 2147483647", symbols={"s0": "x.size()[0]"},
              added_by="inductor (_inductor/sizevars.py:819 in expect_true)", source=fc1, source_via="symbol"),
        Guard("0/1", "TENSOR_MATCH", "check_tensor(x, Tensor, ...)", raw="check_tensor(L['x'], Tensor, ...)",
              added_by="dynamo", source=fc1, source_via="guard"),
    ]
    record.recompiles[0].failures = [GuardFailure(
        "0/0", "tensor 'x' size mismatch at index 0. expected 8, actual 16", {"x.size()[0]": "16"}, [fc1])]
    forward = record.graphs[0]
    addmm = next(node.name for node in forward.post_grad_nodes if node.source == fc1)
    gelu_nodes = [node.name for node in forward.post_grad_nodes if node.source == gelu]
    forward.not_fused = [NotFused("op0", "op1", [addmm], gelu_nodes, "node1 is extern or nop", "extern")]
    return record


def make_big_run(workspace: Path, kernel_count: int) -> RunRecord:
    """A forward graph with `kernel_count` one-node Triton kernels, each from its own source line."""
    lines = [f"    y{i} = x * {i}" for i in range(kernel_count)]
    source = workspace / "examples" / "big.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("def forward(x):\n" + "\n".join(lines) + "\n")
    post_nodes, kernels, wrapper_lines = [], [], []
    for i in range(kernel_count):
        name = f"mul_{i}"
        location = SourceLocation(str(source), i + 2, "forward", lines[i].strip())
        post_nodes.append(FxNode(name, "call_function", "aten.mul.Tensor", location, "stack_trace", i + 3))
        kernel_source = (f"@triton.jit\ndef triton_poi_fused_mul_{i}(in_ptr0, out_ptr0):\n"
                         f"    tmp0 = tl.load(in_ptr0)\n    tl.store(out_ptr0, tmp0 * {i})\n")
        kernels.append(Kernel(
            name=f"triton_poi_fused_mul_{i}", kind="triton", source=kernel_source, nodes=[name],
            lines=origins(kernel_source, [(3, [name], "loads for"), (4, [name], "computes")]),
            inductor_nodes=[name], wrapper_lines=[i + 1],
        ))
        wrapper_lines.append(LineOrigin(i + 1, f"triton_poi_fused_mul_{i}.run(buf{i})", [name], "launches kernel"))
    graph = GraphRecord(
        frame_id=0, frame_compile_id=0, attempt=0, kind="inference",
        post_grad_text="\n" * (kernel_count + 3),
        wrapper_text="\n".join(origin.text for origin in wrapper_lines) + "\n",
        post_grad_nodes=post_nodes, kernels=kernels, wrapper_lines=wrapper_lines,
        wrapper_attributable=kernel_count,
    )
    return RunRecord(target="examples/big.py:make", device="virtual-cuda", mode="inference", dynamic=False,
                     torch_version="2.13.0", triton_version="3.7.1", provenance="line", created=1_763_800_100.0,
                     workspace=str(workspace), graphs=[graph])


# -- one rank of a tensor-parallel job (tests/engine/test_distributed.py, the LSP and TUI ones) --

STYLE = "torch/distributed/tensor/parallel/style.py"
RANK_FW_WRAPPER = "runs/{run}/graphs/0_0_0-forward/wrapper.py"  # a rank run's forward wrapper in its store


def rank_run(workspace: Path, rank: int, world_size: int = 2, job: str = "torchrun:abc", created: float = 0.0):
    """The MLP run as one rank of a tensor-parallel job: fc2's addmm stands for an all_reduce
    (RowwiseParallel's output), its backward is a DDP split part."""
    from kernelscope.run_record import Collective, GraphSplit, RankInfo

    run = make_mlp_run(workspace, created=created or 1_763_800_000.0 + rank)
    run.rank = RankInfo(rank=rank, world_size=world_size, job=job, backend="gloo", local_rank=rank)
    forward, backward = run.graphs
    fc2 = next(node for node in forward.post_grad_nodes if node.name == "addmm_1")
    fc2.module_path, fc2.module_class = "fc2", "torch.nn.modules.linear.Linear"
    forward.collectives = [Collective(
        node="addmm_1", op="all_reduce", role="issue", peers=[], group="0", group_size=world_size,
        reduce_op="sum", bytes=1024, issued_by="RowwiseParallel output", style="RowwiseParallel",
        frame=SourceLocation(STYLE, 298, "_prepare_output_fn", "outputs = outputs.redistribute(...)"),
        redistribute="P(sum) -> R", model_line=fc2.source)]
    backward.split = GraphSplit(part=1, parts=2, params=["fc2.weight", "fc2.bias"], bucket_bytes=8320,
                                cap_bytes=1 << 20, splitter="DDPOptimizer")
    return run


# -- a hand-made build below the kernel (tests/asm/test_asm.py, tests/lsp/test_lsp_asm.py) --


def write_hand_made_build(store, run_id: int) -> tuple[str, int]:
    """Store a build of the forward GELU kernel whose SASS line 3 came from its erf line:
    (the kernel file, the erf line)."""
    from kernelscope.asm.model import AsmFacts, AsmLine, KernelAsm, LaunchConfig, Occupancy

    [pending] = [kernel for kernel in store.asm.pending(run_id) if "0_0_0-forward" in kernel.file]
    erf = next(number for number, text in enumerate(store.absolute_path(pending.file).read_text().splitlines(), 1)
               if "libdevice.erf" in text)
    config = LaunchConfig.of({"XBLOCK": 512}, 4, 1)
    facts = AsmFacts(arch="sm_90", config=config, candidates=[config], chosen_by="the kernel's only config",
                     registers=16, spill_bytes=0, spill_load_bytes=0, local_bytes=0, local_stores=0, local_loads=0,
                     shared_bytes=0, num_warps=4, num_stages=1, occupancy=Occupancy(16, 64, 64, "warps"),
                     instructions=2, mix={"special function": 1, "control": 1})
    built = KernelAsm(pending.name, facts, {"ttir": "", "ttgir": "", "ptx": "ex2.approx.f32 %f1, %f0;\n",
                                            "sass": ".text:\n.L_x_0:\n  MUFU.EX2 R0, R0 ;\n  EXIT ;\n"},
                      [AsmLine("ptx", 1, erf, "ex2.approx.f32 %f1, %f0;", "ex2.approx.f32"),
                       AsmLine("sass", 3, erf, "MUFU.EX2 R0, R0", "MUFU.EX2"),
                       AsmLine("sass", 4, erf + 3, "EXIT", "EXIT")])
    assert store.asm.write(pending, built)
    return pending.file, erf


# -- pytest fixtures (import them into a test module to use them) -------------------

import pytest  # noqa: E402

from kernelscope.store import StoreBackend  # noqa: E402


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A workspace directory that is also the current directory."""
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def mlp_store(workspace):
    """A store in `<workspace>/.kernelscope` holding one MLP run (run id 1)."""
    store = StoreBackend(workspace / ".kernelscope")
    run_id = store.write_run(make_mlp_run(workspace))
    assert run_id == 1
    yield store
    store.close()
