"""Compiling everything but a line: the post-grad nodes of chosen model lines left to eager.

Inductor lowers a post-grad node whose `meta["should_fallback"]` is set with its fallback
handler: the aten op runs as eager runs it, an extern call Inductor cannot fuse
(`GraphLowering.call_function`). Every supported torch (2.11 on) reads that key; 2.13 on
also reads `meta["custom"]["fallback_to_eager"]`, which a user sets with
`torch.fx.traceback.annotate({"fallback_to_eager": True})` around a line, but 2.11 ignores it
(torch_compat gate "inductor: fallback_to_eager node tag"). kernelscope sets `should_fallback`
without touching the model, from a post-grad custom pass (`config.post_grad_custom_post_pass`,
chained after one the user set, so after Inductor's own post-grad passes) on every node whose
innermost user frame is one of the lines; patch_points.NUMERICS_NODE_FALLBACK checks that the
installed Inductor still reads the key. `emulate_precision_casts` is Inductor's own config.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from kernelscope.compile_text.stack_traces import user_frames
from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import checked
from kernelscope.errors import UserError

# The node meta key GraphLowering.call_function reads on every supported torch (see above).
FALLBACK_KEY = "should_fallback"


def parse_line(spec: str, workspace: Path) -> tuple[str, int]:
    """`path.py:LINE` -> (resolved path, line)."""
    path, _, line = spec.rpartition(":")
    if not path or not line.isdigit():
        raise UserError(f"--eager-line {spec!r}: give FILE.py:LINE (the model line to leave to eager)")
    resolved = Path(path) if Path(path).is_absolute() else workspace / path
    return str(resolved.resolve()), int(line)


def _lines_pass(lines: set[tuple[str, int]], before, tagged: list[str]):
    from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

    from kernelscope.engine.fx_nodes import skip_prefixes

    skip = skip_prefixes()

    class LeaveLinesToEager(CustomGraphPass):
        def __call__(self, graph) -> None:
            if before is not None:
                before(graph)
            for node in graph.nodes:
                if node.op != "call_function":
                    continue
                frames = user_frames(node.meta.get("stack_trace"), skip)
                if frames and (str(Path(frames[-1].file).resolve()), frames[-1].line) in lines:
                    node.meta[FALLBACK_KEY] = True
                    tagged.append(node.name)

        def uuid(self):
            return (get_hash_for_files((__file__,)), tuple(sorted(lines)))

    return LeaveLinesToEager()


@contextlib.contextmanager
def numerics_config(eager_lines: list[tuple[str, int]], emulate_precision_casts: bool):
    """Inductor's config for a numerics recompile; yields the names of the nodes left to eager."""
    import torch._inductor.config as inductor_config

    tagged: list[str] = []
    changes: dict = {}
    if eager_lines:
        checked(points.NUMERICS_NODE_FALLBACK)
        changes["post_grad_custom_post_pass"] = _lines_pass(
            set(eager_lines), inductor_config.post_grad_custom_post_pass, tagged)
    if emulate_precision_casts:
        changes["emulate_precision_casts"] = True
    with inductor_config.patch(changes):
        yield tagged
