"""Record parsers: which records of a log matter, and what each contributes.

`PARSERS` is the registry: record kind -> handler. Handlers fill a
`RankLog` (what one rank's log says about its compiles) and never look at
anything but the record. Kinds in `KNOWN_UNUSED` are torch records that carry
nothing kernelscope stores (chromium events, tensor descriptions, ...);
any other kind is counted as unknown, so a new torch record shows up in the
import summary instead of vanishing.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from kernelscope.compile_text.guards import TraceEntry
from kernelscope.trace_import.log_reader import TraceLogRecord

CompileKey = tuple[int, int, int, int | None]  # frame, frame compile, attempt, compiled-autograd id


@dataclass
class InductorCompile:
    """One Inductor compilation (forward, backward or inference) seen in the log."""

    key: CompileKey
    post_grad_text: str = ""
    wrapper_text: str = ""
    node_mappings: dict | None = None
    kernel_stack_traces: dict | None = None
    first_line: int = 0


@dataclass
class GraphBreakEntry:
    text: str
    compile_id: tuple[int, int, int] | None
    line: int


@dataclass
class RankLog:
    pre_grad: dict[CompileKey, tuple[int, str]] = field(default_factory=dict)  # (preference, text)
    compiles: list[InductorCompile] = field(default_factory=list)
    graph_breaks: list[GraphBreakEntry] = field(default_factory=list)
    recompiles: list[tuple[str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    aot_backward: set[CompileKey] = field(default_factory=set)
    torch_version: str = ""
    unknown_kinds: Counter = field(default_factory=Counter)
    bad_json: list[str] = field(default_factory=list)
    # guards, symbols and recompile reasons, as compile_text/guards.py reads them (docs/why.md)
    why_entries: list[TraceEntry] = field(default_factory=list)

    def latest_compile(self, key: CompileKey, line: int, needs: str) -> InductorCompile:
        """The compile a record of `key` belongs to: the newest one with that id
        that does not have `needs` yet, else a new one (a cache hit replays
        output code without a post-grad graph)."""
        for compile_ in reversed(self.compiles):
            if compile_.key == key:
                if not getattr(compile_, needs):
                    return compile_
                break
        compile_ = InductorCompile(key, first_line=line)
        self.compiles.append(compile_)
        return compile_


def compile_key(record: TraceLogRecord) -> CompileKey | None:
    if record.compile_id is None:
        return None
    return (*record.compile_id, record.compiled_autograd_id)


def _json_payload(log: RankLog, record: TraceLogRecord):
    try:
        value = json.loads(record.payload or "")
    except ValueError:
        log.bad_json.append(f"line {record.line}: {record.kind} payload is not JSON")
        return None
    return value if isinstance(value, dict) else None


# -- handlers ------------------------------------------------------------------

_PRE_GRAD_PREFERENCE = {"artifact:after_pre_grad_graph": 3, "artifact:before_pre_grad_graph": 2,
                        "dynamo_output_graph": 1}


def _pre_grad(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    if key is None or not record.payload:
        return
    preference = _PRE_GRAD_PREFERENCE[record.kind]
    if preference >= log.pre_grad.get(key, (0, ""))[0]:
        log.pre_grad[key] = (preference, record.payload)


def _post_grad(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    if key is not None and record.payload:
        # A post-grad graph always starts a new Inductor compilation.
        compile_ = InductorCompile(key, post_grad_text=record.payload, first_line=record.line)
        log.compiles.append(compile_)


def _output_code(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    if key is not None and record.payload:
        log.latest_compile(key, record.line, "wrapper_text").wrapper_text = record.payload


def _node_mappings(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    value = _json_payload(log, record)
    if key is not None and value is not None:
        log.latest_compile(key, record.line, "node_mappings").node_mappings = value


def _kernel_stack_traces(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    value = _json_payload(log, record)
    if key is not None and value is not None:
        log.latest_compile(key, record.line, "kernel_stack_traces").kernel_stack_traces = value


def _graph_break(log: RankLog, record: TraceLogRecord) -> None:
    if record.payload:
        log.graph_breaks.append(GraphBreakEntry(record.payload, record.compile_id, record.line))


def _compilation_metrics(log: RankLog, record: TraceLogRecord) -> None:
    metrics = record.metadata.get("compilation_metrics")
    if not isinstance(metrics, dict) or record.compile_id is None:
        return
    frame, frame_compile, _attempt = record.compile_id
    compile_id = f"{frame}/{frame_compile}"
    reason = metrics.get("recompile_reason")
    if reason:
        log.recompiles.append((compile_id, str(reason)))
    if metrics.get("fail_type"):
        log.failures.append(f"compile [{compile_id}] failed: {metrics.get('fail_type')}: "
                            f"{str(metrics.get('fail_reason') or '').strip()[:300]}")


def _why(log: RankLog, record: TraceLogRecord) -> None:
    """A record the guards are read from (compile_text/guards.py), kept in order."""
    cid = record.compile_id
    compile_id = f"{cid[0]}/{cid[1]}" + (f"_{cid[2]}" if cid[2] else "") if cid else ""
    log.why_entries.append(TraceEntry(record.kind, record.metadata, record.payload, compile_id))


def _aot_backward(log: RankLog, record: TraceLogRecord) -> None:
    key = compile_key(record)
    if key is not None:
        log.aot_backward.add(key)


def _torch_version(log: RankLog, record: TraceLogRecord) -> None:
    value = _json_payload(log, record)
    if value and isinstance(value.get("pytorch_version"), str):
        log.torch_version = value["pytorch_version"]


Handler = Callable[[RankLog, TraceLogRecord], None]

PARSERS: dict[str, Handler] = {
    "artifact:after_pre_grad_graph": _pre_grad,
    "artifact:before_pre_grad_graph": _pre_grad,
    "dynamo_output_graph": _pre_grad,
    "artifact:inductor_post_grad_graph": _post_grad,
    "inductor_post_grad_graph": _post_grad,  # older torch logged it as its own record
    "inductor_output_code": _output_code,
    "artifact:inductor_provenance_tracking_node_mappings": _node_mappings,
    "artifact:inductor_provenance_tracking_kernel_stack_traces": _kernel_stack_traces,
    "artifact:dynamo_graph_break_reason": _graph_break,
    "compilation_metrics": _compilation_metrics,
    "aot_backward_graph": _aot_backward,
    "artifact:torch_version": _torch_version,
    # why: guards, specializations, recompile reasons (compile_text/guards.py)
    "dynamo_start": _why,
    "create_symbol": _why,
    "guard_added": _why,
    "guard_added_fast": _why,
    "symbolic_shape_specialization": _why,
    "dynamo_cpp_guards_str": _why,
    "artifact:recompile_reasons": _why,
}

# Handlers that read metadata only: their payload is never decoded.
METADATA_ONLY = {"compilation_metrics", "aot_backward_graph", "dynamo_start", "create_symbol", "guard_added",
                 "guard_added_fast", "symbolic_shape_specialization"}

KNOWN_UNUSED = {
    "chromium_event", "describe_storage", "describe_tensor", "describe_source",
    "dynamo_guards", "bwd_compilation_metrics",
    "aot_autograd_backward_compilation_metrics", "aot_joint_graph", "aot_forward_graph",
    "aot_inference_graph", "compiled_autograd_graph", "optimize_ddp_split_graph",
    "optimize_ddp_split_child", "dump_file",
    "guard_on_data_dependent_error", "propagate_real_tensors", "propagate_real_tensors_provenance",
    "create_unbacked_symbol",
    "expression_created", "missing_fake_kernel", "mismatched_fake_kernel", "exported_program",
    "export", "inductor_input_graph", "link", "stack", "sym_expr_info", "unbacked_symbol",
}


def wants_payload(kind: str) -> bool:
    return kind in PARSERS and kind not in METADATA_ONLY


def handle(log: RankLog, record: TraceLogRecord) -> None:
    handler = PARSERS.get(record.kind)
    if handler is not None:
        handler(log, record)
    elif not (record.kind in KNOWN_UNUSED or record.kind.startswith(("artifact:", "graph_dump:"))):
        log.unknown_kinds[record.kind] += 1
