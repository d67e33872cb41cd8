"""Record one real torch.compile session into a RunRecord.

The recorder sets Inductor up for a recording (fresh caches so codegen really
runs, provenance tracking on, compiles in-process), installs the probes and the
structured-trace capture, picks the device target, runs the user's model or
script, and turns what was seen into graphs, kernels and links.
"""
from __future__ import annotations

import contextlib
import os
import re
import resource
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kernelscope.decisions.model import DecisionSet
from kernelscope.errors import CompileError, TargetError, UserError
from kernelscope.engine import patch_points, patching, rank_info, torch_compat
from kernelscope.record import GraphSplit, Recompile, RunRecord

DEVICES = ("auto", "cuda", "virtual-cuda", "cpu-triton")
MIN_TORCH = torch_compat.MIN_TORCH


@dataclass
class RecordOptions:
    device: str = "auto"
    train: bool = False
    dynamic: bool = False
    execute: bool = False  # cpu-triton: run the kernels in Triton's interpreter
    workspace: Path = field(default_factory=Path.cwd)
    # A distributed job recorded in this one process on torch's fake process group
    # (devices/fake_distributed.py): its world size and this process's rank; `job` names
    # the job its ranks' runs share (engine/rank_info.py).
    world_size: int | None = None
    rank: int = 0
    job: str | None = None
    on_phase: Callable[[str, str], None] = lambda phase, detail: None
    # virtual-cuda: a GPU's recorded timing decisions to replay (kernelscope.decisions;
    # docs/decisions.md); those it does not hold are guessed, and the run says which.
    decisions: DecisionSet | None = None


def import_torch(options: RecordOptions) -> float:
    """Import torch and Inductor; returns the seconds it took (0 if already imported)."""
    if options.device == "cpu-triton":
        from kernelscope.engine.devices import cpu_triton

        if options.execute and "torch._inductor.runtime.triton_helpers" in sys.modules \
                and os.environ.get(cpu_triton.INTERPRET_ENV) != "1":
            raise UserError(
                "--execute needs Triton's interpreter, which must be enabled before torch's "
                "Triton helpers are imported: run `kernelscope compile` in a fresh process"
            )
        cpu_triton.prepare_process(options.execute)
    started = time.perf_counter()
    already = "torch._inductor.compile_fx" in sys.modules
    options.on_phase("import", "torch")
    try:
        import torch
        import torch._inductor.compile_fx  # noqa: F401
    except ImportError as error:
        raise UserError(
            f"kernelscope's engine needs PyTorch {MIN_TORCH[0]}.{MIN_TORCH[1]} or newer in this "
            f"Python ({sys.executable}): {error}"
        ) from error
    if not torch_compat.holds("supported torch"):
        raise UserError(
            f"torch {torch.__version__} is too old: kernelscope needs torch "
            f"{MIN_TORCH[0]}.{MIN_TORCH[1]} or newer (pip install -U torch)"
        )
    return 0.0 if already else time.perf_counter() - started


def resolve_device(requested: str) -> str:
    import torch

    if requested not in DEVICES:
        raise UserError(f"unknown target '{requested}': choose one of {', '.join(DEVICES)}")
    has_gpu = torch.cuda.is_available()
    if requested == "auto":
        return "cuda" if has_gpu else "virtual-cuda"
    if requested == "cuda" and not has_gpu:
        raise UserError(
            "--target cuda needs a CUDA GPU and a CUDA build of torch; none is available here "
            "(use --target virtual-cuda for the same CUDA code without a GPU)"
        )
    return requested


class Recording:
    """Context manager around the user's code: everything that makes a recording."""

    def __init__(self, device: str, options: RecordOptions):
        from kernelscope.engine.distributed_probes import DistributedProbes
        from kernelscope.engine.probes import Probes
        from kernelscope.engine.trace_capture import TraceCapture

        self.device = device
        self.options = options
        self.probes = Probes()
        self.distributed = DistributedProbes(options.job)
        self.trace = TraceCapture()
        self.probes.on_phase = options.on_phase
        self.probes.trace_position = lambda: len(self.trace.records)
        self._stack = contextlib.ExitStack()
        self.device_warnings: list[str] = []
        self.autotuners: list | None = None  # --target cuda: Inductor's autotuners, read after the run
        self.decisions = _decision_log(device, options)

    def __enter__(self):
        # What cannot work in part is checked before anything is set up (patching.require).
        patching.require("recording", "nothing was recorded")
        if self.device in ("virtual-cuda", "cpu-triton"):
            patching.require(self.device, "nothing was recorded")
        try:
            return self._set_up()
        except BaseException:
            self._stack.close()
            raise

    def _set_up(self):
        import torch
        import torch._inductor.config as inductor_config
        from torch._inductor.utils import fresh_cache

        from kernelscope.engine import torch_fixes

        stack = self._stack
        stack.enter_context(_quiet_recording_warnings())
        torch._dynamo.reset()
        stack.callback(torch._dynamo.reset)
        stack.enter_context(_counters_from_zero())
        # A cache hit would skip codegen and leave provenance silently missing:
        # every recorded graph is generated afresh, in a throw-away cache directory.
        stack.enter_context(fresh_cache())
        stack.enter_context(
            inductor_config.patch(
                {
                    "force_disable_caches": True,
                    "compile_threads": 1,
                    "trace.provenance_tracking_level": 1,
                }
            )
        )
        self.device_warnings = stack.enter_context(device_target(self.device, self.options.execute, self.decisions))
        if self.device == "cuda":
            from kernelscope.engine import asm_launches
            from kernelscope.engine.decisions import session

            self.autotuners = stack.enter_context(asm_launches.autotuners_seen(self.device_warnings))
            stack.enter_context(session.recording(self.decisions))
        stack.enter_context(self.trace)
        stack.enter_context(self.distributed)  # first: its wrappers keep torch's signatures
        stack.enter_context(self.probes)
        self.fixes = stack.enter_context(torch_fixes.upstream_fixes())
        return self

    def __exit__(self, *exc):
        self._stack.close()


def _decision_log(device: str, options: RecordOptions):
    """The log of the recording's timing decisions; virtual-cuda replays `options.decisions`."""
    from kernelscope.engine.decisions.log import DecisionLog

    chosen = options.decisions
    if chosen is not None and chosen.explicit and device != "virtual-cuda":
        why = ("on a GPU, Inductor times them itself" if device == "cuda"
               else "cpu-triton makes no GPU timing decisions")
        raise UserError(f"--decisions {chosen.source} replays a GPU's timing decisions under virtual-cuda; "
                        f"this run's target is {device} ({why}): drop --decisions, or use --target virtual-cuda")
    return DecisionLog(chosen if device == "virtual-cuda" else None)


@contextlib.contextmanager
def device_target(device: str, execute: bool = False, decisions=None):
    """Make torch.compile generate code for `device` while inside (see devices/); yields
    the warnings a run should carry about the target. virtual-cuda answers the questions
    a GPU answers by timing from `decisions` (a DecisionLog; a fresh one when None: each
    answer guessed by Inductor's own rule).

    Used by recordings and by the benchmark's plain-compile baseline alike.
    """
    from kernelscope.engine.decisions import session
    from kernelscope.engine.decisions.log import DecisionLog
    from kernelscope.engine.devices import codegen_only, cpu_triton, cuda_attention, meta_models, virtual_cuda

    warnings_for_run: list[str] = []
    if device in ("virtual-cuda", "cpu-triton"):
        patching.require(device, "nothing was recorded")
    with contextlib.ExitStack() as stack:
        if device == "virtual-cuda":
            from kernelscope.engine.devices.cuda_guard import ensure_cuda_device_guard

            problem = ensure_cuda_device_guard()
            if problem:
                warnings_for_run.append(f"{problem}: Python indexing inside decompositions may fail")
            stack.enter_context(meta_models.captured_as_cpu())
            stack.enter_context(cuda_attention.attention_as_on_cuda())
            log = decisions if decisions is not None else DecisionLog()
            session.check_gpu(log, session.gpu_of(device))
            stack.enter_context(session.replaying(log))
            stack.enter_context(_compile_fx_replaced(virtual_cuda.make_compile_fx))
        elif device == "cpu-triton":
            stack.enter_context(cpu_triton.cpu_triton_backend(execute))
            if not execute:
                stack.enter_context(_inner_compile_replaced(codegen_only.make_inner_compile))
        yield warnings_for_run


@contextlib.contextmanager
def _counters_from_zero():
    """Number AOT graph ids and Inductor's provenance debug handles from zero, so two
    recordings of one model in one process (a warm worker) generate identical code."""
    import itertools

    import torch._functorch.aot_autograd as aot_autograd
    import torch._inductor.debug as inductor_debug

    if patch_points.AOT_COUNTER.present():  # reset for good: nothing to put back
        aot_autograd.AOT_COUNTER = itertools.count()
    reset = getattr(inductor_debug, "reset_provenance_globals", None)
    with reset() if reset is not None else contextlib.nullcontext():
        if hasattr(inductor_debug, "reset_inductor_kernel_provenance_debug_handle"):
            inductor_debug.reset_inductor_kernel_provenance_debug_handle()
        yield


@contextlib.contextmanager
def _quiet_recording_warnings():
    """Silence the warnings our own recording set-up causes (not the user's)."""
    with warnings.catch_warnings():
        # We disable caches on purpose (fresh codegen), which also disables PGO.
        warnings.filterwarnings("ignore", message=".*dynamo_pgo force disabled.*")
        # virtual-cuda reports an sm_90 device; the TF32 hint is about a real GPU run.
        warnings.filterwarnings("ignore", message=".*TensorFloat32 tensor cores.*")
        yield


@contextlib.contextmanager
def _compile_fx_replaced(make_compile_fx):
    """torch.compile's default backend (compile_fx) is replaced while inside."""
    with patching.wrapped(patch_points.VIRTUAL_COMPILE_FX, make_compile_fx):
        yield


@contextlib.contextmanager
def _inner_compile_replaced(make_inner_compile):
    """Every compile_fx call (torch.compile's default backend) uses our inner compile."""
    import torch._inductor.compile_fx as compile_fx_module

    def make_compile_fx(original):
        def compile_fx(model_, example_inputs_, inner_compile=None, **kwargs):
            if inner_compile is None or inner_compile is compile_fx_module.compile_fx_inner:
                inner_compile = make_inner_compile(compile_fx_module.compile_fx_inner)
            return original(model_, example_inputs_, inner_compile=inner_compile, **kwargs)

        return compile_fx

    with patching.wrapped(patch_points.CPU_COMPILE_FX, make_compile_fx):
        yield


# -- running the user's code --------------------------------------------------------


def scalar_loss(outputs):
    """The loss `--train` differentiates: the sum of every output that requires grad."""
    import torch

    tensors = [t for t in _flatten(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not tensors:
        raise TargetError(
            "--train: no output requires grad (give the model parameters, or inputs with "
            "requires_grad=True)"
        )
    return sum(t.sum() for t in tensors)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    elif hasattr(value, "to_tuple"):
        yield from _flatten(value.to_tuple())
    else:
        yield value


def _max_error(actual, expected) -> float:
    import torch

    worst = 0.0
    for a, e in zip(_flatten(actual), _flatten(expected)):
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor):
            worst = max(worst, (a.detach().float() - e.detach().float()).abs().max().item())
    return worst


def _prepare_inputs(model, inputs, options: RecordOptions, device: str):
    import torch

    if device == "cuda":
        # The factory builds on the CPU; the real GPU target compiles for the GPU.
        if isinstance(model, torch.nn.Module):
            model.to("cuda")
        inputs = tuple(t.to("cuda") if isinstance(t, torch.Tensor) else t for t in inputs)

    if options.train and not isinstance(model, torch.nn.Module):
        # A plain function has no parameters: differentiate w.r.t. its float inputs.
        inputs = tuple(
            t.detach().requires_grad_(True)
            if isinstance(t, torch.Tensor) and t.is_floating_point() else t
            for t in inputs
        )
    if options.dynamic:
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.dim() > 0:
                torch._dynamo.mark_dynamic(t, 0)
    return inputs


def _check_meta_model(model, inputs, options: RecordOptions, device: str) -> list[str]:
    """The meta tensors the factory returned (a model built on the meta device); only
    virtual-cuda records such a model, which has sizes and no values."""
    from kernelscope.engine.devices import meta_models

    on_meta = meta_models.meta_tensors(model, inputs)
    if on_meta and device != "virtual-cuda":
        raise TargetError(
            f"--target {device} needs weight values, and `{on_meta[0]}` is on the meta device "
            f"({len(on_meta)} meta tensor(s)): record a meta-device model with --target virtual-cuda, "
            "or build it with real weights")
    return on_meta


def _run_factory_model(model, inputs, options: RecordOptions, device: str) -> float | None:
    import torch

    compare = device == "cpu-triton" and options.execute
    expected = None
    if compare:
        with torch.no_grad():
            expected = model(*[t.detach() if isinstance(t, torch.Tensor) else t for t in inputs])
    options.on_phase("capture", "Dynamo, AOTAutograd")
    compiled = torch.compile(model, dynamic=True if options.dynamic else None)
    try:
        if options.train:
            outputs = compiled(*inputs)
            options.on_phase("capture", "backward")
            scalar_loss(outputs).backward()
        else:
            with torch.no_grad():
                outputs = compiled(*inputs)
    except Exception as error:  # noqa: BLE001 - re-raised, with advice where we have some
        if device == "cuda" and _mixes_devices(error):
            raise TargetError(
                f"--target cuda: the model mixes CPU and GPU tensors ({_first_line(error)}). "
                "kernelscope moves an nn.Module and the example inputs the factory returns to the GPU, "
                "but not tensors held elsewhere (a function closing over a CPU model, tensors made "
                "in forward without a device): give the factory a `device` parameter and build the "
                "model and inputs on it (kernelscope calls it with device='cuda'), or create them "
                "on 'cuda' directly (the last good run in the store is unchanged)"
            ) from error
        raise
    return _max_error(outputs, expected) if compare else None


def _mixes_devices(error: BaseException) -> bool:
    # "... found two different devices cpu, cuda:0" (FakeTensor), "Expected all tensors to be
    # on the same device, but found at least two devices" (eager and Dynamo)
    return bool(re.search(r"two (different )?devices|on the same device", str(error)))


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    found = next((line for line in lines if re.search(r"two (different )?devices|on the same device", line)),
                 lines[0] if lines else type(error).__name__)
    return found[:300]


def _raise_compile_error(error: BaseException, target_file: Path | None, probes=None) -> None:
    """Turn an exception from the user's run into a one-line error naming file:line."""
    import traceback

    from kernelscope.engine import fx_nodes

    if isinstance(error, UserError):
        raise error
    skip = fx_nodes.skip_prefixes() + (os.path.dirname(os.path.dirname(__file__)) + os.sep,)
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if not frame.filename.startswith(skip):
            location = f"{frame.filename}:{frame.lineno}"
    text = str(error)
    message = text.strip().splitlines()
    first = message[0] if message else type(error).__name__
    if first.endswith(":"):  # "backend='inductor' raised:" — the cause is on the next line
        first = " ".join([first] + [line.strip() for line in message[1:] if line.strip()][:1])
    # Dynamo's errors carry the user's frames as text ("from user code: File ...").
    for marker in ("from user code:", "Original traceback:"):
        if marker in text:
            frame = fx_nodes.user_frame(text.split(marker, 1)[1], skip)
            if frame is not None:
                location = f"{frame.file}:{frame.line}"
                break
    explanation = next((line.strip().removeprefix("Explanation: ") for line in message
                        if line.strip().startswith("Explanation: ")), "")
    if explanation:
        first = f"{first}: {explanation[-300:]}"
    failed_node = getattr(probes, "failed_node", None)
    inductor_failed = failed_node is not None or type(error).__name__ in (
        "InductorError", "BackendCompilerFailed", "LoweringException")
    if inductor_failed:
        node_text = ""
        if failed_node is not None:
            name, op_target, stack_trace = failed_node
            node_text = f" while lowering node {name} ({op_target})"
            source = fx_nodes.user_frame(stack_trace, fx_nodes.skip_prefixes())
            if source is not None:
                location = f"{source.file}:{source.line}"
        location = location or str(target_file or "")
        cause = first.replace("LoweringException: ", "")
        raise CompileError(
            f"{location}: Inductor failed{node_text}: {cause[:400]} "
            "(the last good run in the store is unchanged)"
        ) from error
    location = location or str(target_file or "")
    raise TargetError(
        f"{location}: the model raised {type(error).__name__}: {first[:400]} "
        "(the last good run in the store is unchanged)"
    ) from error


# -- building the run ----------------------------------------------------------------


def _recompiles(trace) -> list[Recompile]:
    found = []
    for record in trace.of_kind("compilation_metrics"):
        metrics = record.metadata.get("compilation_metrics") or {}
        reason = metrics.get("recompile_reason")
        if reason and record.compile_id:
            cid = record.compile_id
            found.append(Recompile(f"{cid[0]}/{cid[1]}", str(reason)))
    return found


def build_run(recording: Recording, target: str, options: RecordOptions, device: str) -> RunRecord:
    import torch
    import triton

    from kernelscope.engine import fx_nodes, links
    from kernelscope.engine.trace_capture import parse_graph_break

    probes, trace = recording.probes, recording.trace
    skip = fx_nodes.skip_prefixes()
    mappings = [
        (index, record) for index, record in enumerate(trace.records)
        if record.kind == "artifact:inductor_provenance_tracking_node_mappings"
    ]
    forward_by_seq_nr: dict[tuple, dict] = {}
    graphs = []
    for capture in probes.graphs:
        pre = next((p for p in reversed(probes.pre_grad) if p.compile_id == capture.compile_id), None)
        mapping = next(
            (r for i, r in mappings if i >= capture.trace_position and r.compile_id == capture.compile_id),
            None,
        )
        mapping_json = _json_or_none(mapping.payload) if mapping else None
        per_compile = forward_by_seq_nr.setdefault(capture.compile_id, {})
        graphs.append(links.build_graph(capture, pre, mapping_json, per_compile, skip, recording.distributed))

    from kernelscope.engine.decisions import session

    decisions = recording.decisions
    if recording.autotuners is not None:  # the configs the GPU launched (below the kernel)
        from kernelscope.engine import asm_launches

        session.launch_decisions(graphs, asm_launches.attach(graphs, recording.autotuners), decisions)
        recording.autotuners = None
    elif device == "virtual-cuda":
        session.replay_launches(graphs, decisions)
    gpu = session.gpu_of(device)
    warnings = list(probes.disabled and [
        f"line-level provenance unavailable on torch {torch.__version__}: kernel-level only "
        f"({'; '.join(probes.disabled)})"
    ])
    warnings += recording.device_warnings
    warnings += recording.fixes.warnings(torch.__version__)
    warnings += [f"a probe failed and was skipped: {error.splitlines()[0]}" for error in probes.errors[:5]]
    warnings += _distributed_warnings(recording.distributed, graphs)
    warnings += list(dict.fromkeys(decisions.problems))
    warnings += session.replay_warnings(decisions, gpu, torch.__version__, getattr(triton, "__version__", "unknown"))
    return RunRecord(
        target=target,
        device=device,
        mode="train" if options.train or any(g.kind == "backward" for g in graphs) else "inference",
        dynamic=options.dynamic,
        torch_version=torch.__version__,
        triton_version=getattr(triton, "__version__", "unknown"),
        provenance="line" if probes.line_level else "kernel",
        created=time.time(),
        workspace=str(options.workspace.resolve()),
        graphs=graphs,
        graph_breaks=[parse_graph_break(r.payload, r.compile_id)
                      for r in trace.of_kind("artifact:dynamo_graph_break_reason")],
        recompiles=_recompiles(trace),
        warnings=warnings,
        config={"execute": options.execute},
        rank=recording.distributed.rank or rank_info.current(options.job),
        gpu=gpu,
        decisions=list(decisions.decisions),
        replay=decisions.replay_record(),
    )


def _distributed_warnings(distributed, graphs) -> list[str]:
    """Probes of distributed programs that were off or failed, where the run needed them;
    graphs that share a compile id and kind (a split no probe named) are told apart."""
    found = [f"a distributed probe failed and was skipped: {error.splitlines()[0]}"
             for error in distributed.errors[:5]]
    keys: dict[str, list] = {}
    for graph in graphs:
        keys.setdefault(graph.key, []).append(graph)
    repeated = [same for same in keys.values() if len(same) > 1]
    for same in repeated:
        for part, graph in enumerate(same):
            graph.split = GraphSplit(part=part, parts=len(same), splitter="")
    if repeated:
        found.append(f"{len(repeated)} compile(s) made several graphs of one kind (a split no probe named): "
                     "numbered as parts")
    if distributed.disabled and (repeated or any(graph.collectives for graph in graphs)):
        found.append(f"distributed probes off on torch {_torch_version()}: {'; '.join(distributed.disabled)}")
    return found


def _torch_version() -> str:
    import torch

    return torch.__version__


@contextlib.contextmanager
def _fake_job(options: RecordOptions):
    """`--world-size N`: torch's fake process group around loading and running the target."""
    if options.world_size is None:
        yield
        return
    from kernelscope.engine.devices import fake_distributed

    if options.world_size < 1 or not 0 <= options.rank < options.world_size:
        raise UserError(f"--rank {options.rank} is not a rank of --world-size {options.world_size} "
                        f"(ranks are 0 to {options.world_size - 1})")
    with fake_distributed.fake_process_group(options.world_size, options.rank):
        yield


def _json_or_none(payload: str | None):
    import json

    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return None


def _finish(run: RunRecord, probes, import_seconds: float, total_seconds: float) -> RunRecord:
    lower, codegen = probes.seconds["lower"], probes.seconds["codegen"]
    run.timings = {
        "import": round(import_seconds, 4),
        "capture": round(max(total_seconds - lower - codegen, 0.0), 4),
        "lower": round(lower, 4),
        "codegen": round(codegen, 4),
    }
    run.peak_memory_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return run


def record_factory(spec: str, options: RecordOptions) -> RunRecord:
    """`kernelscope compile path.py:factory`: compile what the factory returns."""
    from kernelscope.engine import targets

    target = targets.parse_factory_spec(spec)
    import_seconds = import_torch(options)
    device = resolve_device(options.device)
    with _fake_job(options):
        return _record_factory(target, options, device, import_seconds)


def record_model(model, inputs: tuple, options: RecordOptions, target: str,
                 source_file: Path | None = None) -> RunRecord:
    """`kernelscope.record(model, *inputs)`: compile a model (or function) the caller already
    holds, as `compile` does what a factory returns. `target` names the run
    (`examples/mlp.py:MLP`); `source_file` is where an error without a user frame points."""
    import_seconds = import_torch(options)
    device = resolve_device(options.device)
    with _fake_job(options):
        return _record_model(model, tuple(inputs), target, source_file, options, device, import_seconds)


def _record_factory(target, options: RecordOptions, device: str, import_seconds: float) -> RunRecord:
    from kernelscope.engine import targets

    options.on_phase("import", str(target.path))
    model, inputs = targets.load_factory(target, targets.factory_device(device))
    shown = f"{_display_path(target.path, options.workspace)}:{target.factory}"
    return _record_model(model, inputs, shown, target.path, options, device, import_seconds)


def _record_model(model, inputs: tuple, shown: str, source_file: Path | None, options: RecordOptions, device: str,
                  import_seconds: float) -> RunRecord:
    on_meta = _check_meta_model(model, inputs, options, device)
    inputs = _prepare_inputs(model, inputs, options, device)
    started = time.perf_counter()
    with Recording(device, options) as recording:
        try:
            max_error = _run_factory_model(model, inputs, options, device)
        except Exception as error:  # noqa: BLE001 - reported as a one-line error
            _raise_compile_error(error, source_file, recording.probes)
    run = build_run(recording, shown, options, device)
    run.execute_max_error = max_error
    if on_meta:
        from kernelscope.engine.devices import meta_models

        run.warnings.append(meta_models.summary(on_meta))
    if not run.graphs:
        raise CompileError(f"{source_file or shown}: torch.compile produced no graph to record")
    return _finish(run, recording.probes, import_seconds, time.perf_counter() - started)


@dataclass
class RecordedBlock:
    """What `record_block` yields: its run, once the block has ended."""

    run: RunRecord | None = None


@contextlib.contextmanager
def record_block(options: RecordOptions, target: str, source_file: Path | None, nothing_compiled: str):
    """Record every graph torch.compile compiles inside the `with` block: `kernelscope run`
    (a script) and `kernelscope.recording()` (the caller's own code). An exception in the
    block becomes the one-line error naming the user's file:line; a block that compiled
    nothing raises CompileError(`nothing_compiled`)."""
    import_seconds = import_torch(options)
    device = resolve_device(options.device)
    started = time.perf_counter()
    block = RecordedBlock()
    with _fake_job(options), Recording(device, options) as recording:
        try:
            yield block
        except Exception as error:  # noqa: BLE001
            _raise_compile_error(error, source_file, recording.probes)
    run = build_run(recording, target, options, device)
    if not run.graphs:
        raise CompileError(nothing_compiled)
    block.run = _finish(run, recording.probes, import_seconds, time.perf_counter() - started)


def record_script(path: Path, args: list[str], options: RecordOptions) -> RunRecord:
    """`kernelscope run script.py -- ARGS`: record every compile the script performs."""
    from kernelscope.engine import targets

    nothing = f"{path}: the script ran but compiled nothing with torch.compile"
    with record_block(options, _display_path(path, options.workspace), path, nothing) as block:
        options.on_phase("capture", str(path))
        targets.run_script(path, args)
    return block.run


def _display_path(path: Path, workspace: Path) -> str:
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())
