"""Small TORCH_TRACE logs written the way torch._logging writes one (glog prefix, JSON
metadata, tab-indented payload with its md5): one compile of `y = torch.relu(x)` as
records. Used by tests/trace_import/test_import.py and by the fuzzing campaign
(bench/faults/fuzz.py, which puts tests/ on sys.path)."""
from __future__ import annotations

import hashlib
import json

POST_GRAD = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[8][1]cuda:0"):
        # File: /work/model.py:5 in forward, code: y = torch.relu(x)
        relu: "f32[8][1]cuda:0" = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None
        return (relu,)
'''

PRE_GRAD = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[8][1]cpu"):
        l_x_ = L_x_

        # File: /work/model.py:5 in forward, code: y = torch.relu(x)
        y: "f32[8][1]cpu" = torch.relu(l_x_);  l_x_ = None
        return (y,)
'''

WRAPPER = """# AOT ID: ['0_inference']
from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()


# kernel path: /tmp/x.py
# Topologically Sorted Source Nodes: [y], Original ATen: [aten.relu]
# Source node to ATen node mapping:
#   y => relu
triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', '''
import triton

@triton.jit
def triton_poi_fused_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        buf0 = empty_strided_cuda((8, ), (1, ), torch.float32)
        # Topologically Sorted Source Nodes: [y], Original ATen: [aten.relu]
        # [Provenance debug handles] triton_poi_fused_relu_0:1
        raw_stream0 = get_raw_stream(0)
        triton_poi_fused_relu_0.run(arg0_1, buf0, 8, stream=raw_stream0)
        del arg0_1
        return (buf0, )
"""

MAPPING = {"preToPost": {"y": ["relu"]}, "postToPre": {"relu": ["y"]},
           "cppCodeToPost": {"triton_poi_fused_relu_0:1": ["relu"]},
           "postToCppCode": {"relu": ["triton_poi_fused_relu_0:1"]}, "version": 2.0}


def trace_line(metadata: dict, payload: str | None = None) -> str:
    """One record as torch's TorchLogsFormatter(trace=True) writes it."""
    if payload is not None:
        metadata = {**metadata, "has_payload": hashlib.md5(payload.encode()).hexdigest()}
    text = f"V1122 21:48:01.218000 4250 torch/_inductor/compile_fx.py:2625] {json.dumps(metadata)}"
    if payload is not None:
        text += "".join(f"\n\t{line}" for line in payload.split("\n"))
    return text + "\n"


def compile_records(frame: int = 0, extra: dict | None = None, mapping: dict = MAPPING,
                    wrapper: str = WRAPPER) -> list[str]:
    cid = {"frame_id": frame, "frame_compile_id": 0, "attempt": 0, **(extra or {})}
    return [
        trace_line({"str": ["/work/model.py", 0]}),
        trace_line({"dynamo_start": {"stack": [{"line": 5, "name": "f", "filename": 0}]}, **cid}),
        trace_line({"artifact": {"name": "after_pre_grad_graph", "encoding": "string"}, **cid}, PRE_GRAD),
        trace_line({"artifact": {"name": "inductor_post_grad_graph", "encoding": "string"}, **cid}, POST_GRAD),
        trace_line({"inductor_output_code": {"filename": "/tmp/x.py"}, **cid}, wrapper),
        trace_line({"artifact": {"name": "inductor_provenance_tracking_node_mappings", "encoding": "json"},
                    **cid}, json.dumps(mapping)),
        trace_line({"chromium_event": {}, **cid}, "{}"),
    ]
