"""Compiling everything but a line: the post-grad nodes of chosen model lines left to eager.

Inductor lowers a post-grad node whose `meta["custom"]["fallback_to_eager"]` is set with its
fallback handler (the aten op runs as eager runs it, `GraphLowering.call_function`). A user
sets that tag with `torch.fx.traceback.annotate({"fallback_to_eager": True})` around the
line; kernelscope sets it without touching the model, from a post-grad custom pass
(`config.post_grad_custom_post_pass`, chained after one the user set) on every node whose
innermost user frame is one of the lines. `emulate_precision_casts` is Inductor's own config.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from kernelscope.compile_text.stack_traces import user_frames
from kernelscope.errors import UserError


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
                    node.meta.setdefault("custom", {})["fallback_to_eager"] = True
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
        changes["post_grad_custom_post_pass"] = _lines_pass(
            set(eager_lines), inductor_config.post_grad_custom_post_pass, tagged)
    if emulate_precision_casts:
        changes["emulate_precision_casts"] = True
    with inductor_config.patch(changes):
        yield tagged
