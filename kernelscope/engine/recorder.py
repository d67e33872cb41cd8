"""Record one real torch.compile session into a RunRecord: the engine's entry points.

- `record_factory` (`kernelscope compile path.py:factory`, the worker's `record`): load the
  factory, then record what it returns as `record_model` does;
- `record_model` (`kernelscope.record(model, *inputs)`): a model the caller holds;
- `record_block` (`kernelscope run`, `kernelscope.recording()`): every compile in a block;
- `record_script` (`kernelscope run script.py -- ARGS`): every compile a script performs.

Each orchestrates one recording: torch imported and the device target resolved
(recording.py, devices/device_target.py), the job's fake process group for
`--world-size` (devices/fake_distributed.py), the user's model called inside a
`Recording` (user_model.py), an exception turned into a one-line error at the user's
line (error_translation.py), and what was seen assembled into the run (run_assembly.py).
Under virtual-cuda a script runs on the virtual GPU (devices/cuda_program.py): it sees a
CUDA device from its first line; so does a factory, called, moved to the virtual GPU,
captured and compiled inside the program (devices/factory_program.py). A model the caller
already holds (`record_model`) is captured on the CPU, as before.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from kernelscope.engine import error_translation, run_assembly, targets, user_model
from kernelscope.engine.devices import factory_program
from kernelscope.engine.devices.device_target import resolve_device
from kernelscope.engine.record_options import RecordOptions
from kernelscope.engine.recording import Recording, import_torch
from kernelscope.errors import CompileError, UserError
from kernelscope.run_record import RunRecord

__all__ = ["RecordOptions", "RecordedBlock", "record_block", "record_factory", "record_model", "record_script"]


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


def record_factory(spec: str, options: RecordOptions) -> RunRecord:
    """`kernelscope compile path.py:factory`: compile what the factory returns."""
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
    _check_options(options, device)
    with _fake_job(options):
        return _record_model(model, tuple(inputs), target, source_file, options, device, import_seconds)


def _record_factory(target, options: RecordOptions, device: str, import_seconds: float) -> RunRecord:
    """A factory may set Dynamo's config for its model (`capture_scalar_outputs`, which `scan`
    and `map` need): it holds for this recording only, so that the warm engine worker and
    the next recording start from the config as it was."""
    import torch._dynamo.config as dynamo_config

    options.on_phase("import", str(target.path))
    _check_options(options, device)
    shown = f"{targets.display_path(target.path, options.workspace)}:{target.factory}"
    saved = dynamo_config.save_config()
    try:
        if factory_program.runs_as_program(device, options):
            return _record_factory_as_program(target, shown, options, device, import_seconds)
        model, inputs = targets.load_factory(target, targets.factory_device(device))
        return _record_model(model, inputs, shown, target.path, options, device, import_seconds)
    finally:
        with warnings.catch_warnings():  # torch warns about the deprecated keys the snapshot holds
            warnings.simplefilter("ignore", FutureWarning)
            dynamo_config.load_config(saved)


@dataclass
class _Called:
    """The model as the recording called it, for what is measured after the compile (eager
    memory, numerics): its inputs, the largest error against eager (`--execute`) and how
    long the compile and call took."""

    model: object
    inputs: tuple
    max_error: float | None
    seconds: float
    measured: object = None  # memory_measure.MeasuredStep (--memory)


def _record_model(model, inputs: tuple, shown: str, source_file: Path | None, options: RecordOptions, device: str,
                  import_seconds: float) -> RunRecord:
    on_meta = user_model.check_meta_model(model, inputs, options, device)
    inputs = user_model.prepare_inputs(model, inputs, options, device)
    started = time.perf_counter()
    with Recording(device, options) as recording:
        max_error = _call_compiled(model, inputs, source_file, options, device, recording)
        called = _Called(model, inputs, max_error, time.perf_counter() - started)
        if options.measure_memory:  # the compiled step again, inside the recording's target
            from kernelscope.engine import memory_measure

            options.on_phase("capture", "the compiled step again, its allocations recorded (--memory)")
            called.measured = memory_measure.measure_step(model, inputs, options.train, device)
    return _finished_run(recording, shown, source_file, options, device, import_seconds, started,
                         called, on_meta, notes=[])


def _record_factory_as_program(target, shown: str, options: RecordOptions, device: str,
                               import_seconds: float) -> RunRecord:
    """A factory on virtual-cuda, run as a GPU program (devices/factory_program.py): the factory
    call, the move to the virtual GPU, the capture, the compile and the eager run inside
    `cuda_program`; a model built on the meta device leaves it before the capture."""
    from kernelscope.engine.devices import cuda_program

    started = time.perf_counter()
    with Recording(device, options) as recording, contextlib.ExitStack() as program:
        notes = program.enter_context(cuda_program.cuda_program())
        model, inputs = targets.load_factory(target, factory_program.DEVICE)
        on_meta = user_model.check_meta_model(model, inputs, options, device)
        if on_meta:
            program.close()  # no values to put on the virtual GPU: captured on the CPU (meta_models)
        else:
            inputs = factory_program.on_the_virtual_gpu(model, inputs)
        inputs = user_model.prepare_inputs(model, inputs, options, device)
        max_error = _call_compiled(model, inputs, target.path, options, device, recording)
        called = _Called(model, inputs, max_error, time.perf_counter() - started)
    return _finished_run(recording, shown, target.path, options, device, import_seconds, started,
                         called, on_meta, notes)


def _call_compiled(model, inputs: tuple, source_file: Path | None, options: RecordOptions, device: str,
                   recording: Recording) -> float | None:
    try:
        if options.aot:  # AOTInductor builds a package instead (engine/aot_build.py)
            from kernelscope.engine import aot_build

            recording.aot_package = aot_build.build(model, inputs, options, device, source_file,
                                                    recording.device_warnings)
            return None
        return user_model.call_compiled(model, inputs, options, device)
    except Exception as error:  # noqa: BLE001 - reported as a one-line error
        error_translation.raise_translated(error, source_file, recording.probes)


def _finished_run(recording: Recording, shown: str, source_file: Path | None, options: RecordOptions, device: str,
                  import_seconds: float, started: float, called: _Called, on_meta: list[str],
                  notes: list[str]) -> RunRecord:
    run = run_assembly.build_run(recording, shown, options, device)
    run.execute_max_error = called.max_error
    run.aot_package = recording.aot_package
    if run.aot_package is not None:  # what the store keeps with the run (store/paths.py AOT_PACKAGE)
        from kernelscope.store.paths import AOT_PACKAGE

        package = run.aot_package
        run.config["aot_package"] = {"file": AOT_PACKAGE, "bytes": package.bytes, "files": package.files}
    if options.train and options.against_eager:
        from kernelscope.engine import eager_memory

        options.on_phase("capture", "eager forward under saved-tensor hooks")
        run.eager_memory = eager_memory.measure(called.model, called.inputs,
                                                "meta" if on_meta else _eager_device(called.inputs))
    if called.measured is not None:
        from kernelscope.engine import memory_measure

        run.measured_memory = memory_measure.joined(called.measured, run.graphs)
    _attach_numerics(run, recording, device, options, called.seconds)
    if on_meta:
        from kernelscope.engine.devices import meta_models

        run.warnings.append(meta_models.summary(on_meta))
    run.warnings.extend(note for note in notes if note not in run.warnings)
    if not run.graphs:
        raise CompileError(f"{source_file or shown}: torch.compile produced no graph to record"
                           + error_translation.fallback_reason(run.graph_breaks))
    return run_assembly.finish(run, recording.probes, import_seconds, time.perf_counter() - started)


def _eager_device(inputs: tuple) -> str:
    import torch

    return next((str(t.device.type) for t in inputs if isinstance(t, torch.Tensor)), "cpu")


def _check_options(options: RecordOptions, device: str) -> None:
    """Options that need the compiled kernels to run (numerics, --memory) on a target where they do."""
    if options.measure_memory:
        from kernelscope.engine import memory_measure

        memory_measure.check_target(device, options.execute)
    if options.numerics and not (device == "cuda" or (device == "cpu-triton" and options.execute)):
        raise UserError(f"numerics need kernels that run: --target cpu-triton (in Triton's interpreter) or "
                        f"--target cuda (on a GPU), not {device}")


def _attach_numerics(run: RunRecord, recording: Recording, device: str, options: RecordOptions,
                     called: float) -> None:
    """`kernelscope numerics`: every kernel output of the run compared with eager (numerics/analysis.py)."""
    if recording.numerics is None:
        return
    from kernelscope.engine.numerics import analysis

    run.numerics = analysis.analyze(run, recording.numerics.calls, recording.graph_keys, device,
                                    options.rtol, options.atol)
    run.numerics.seconds["compile_and_run"] = called
    if options.eager_lines and not recording.eager_nodes:
        run.numerics.notes.append("no post-grad node of the lines left to eager was found: nothing was left to eager")


@dataclass
class RecordedBlock:
    """What `record_block` yields: the target it records for, and its run once the block has ended."""

    device: str = ""
    run: RunRecord | None = None


def _why_nothing(run: RunRecord) -> str:
    """What Dynamo said instead of compiling (a fused optimizer's `torch.compiler.disable`):
    its first three graph breaks, one line each, with their line; "" when it said nothing."""
    said = []
    for brk in run.graph_breaks:
        reason = " ".join(brk.reason.split())[:300]
        where = f" at {brk.source.file}:{brk.source.line}" if brk.source is not None else ""
        if reason and f"{reason}{where}" not in said:
            said.append(f"{reason}{where}")
    return f"; Dynamo ran it eagerly: {' | '.join(said[:3])}" if said else ""


@contextlib.contextmanager
def record_block(options: RecordOptions, target: str, source_file: Path | None, nothing_compiled: str):
    """Record every graph torch.compile compiles inside the `with` block: `kernelscope run`
    (a script) and `kernelscope.recording()` (the caller's own code). An exception in the
    block becomes the one-line error naming the user's file:line; a block that compiled
    nothing raises CompileError(`nothing_compiled`)."""
    import_seconds = import_torch(options)
    device = resolve_device(options.device)
    started = time.perf_counter()
    _check_options(options, device)
    block = RecordedBlock(device)
    with _fake_job(options), Recording(device, options) as recording, _cpu_graphs_on_the_cpu(device, options):
        try:
            yield block
        except Exception as error:  # noqa: BLE001
            error_translation.raise_translated(error, source_file, recording.probes)
    run = run_assembly.build_run(recording, target, options, device)
    if not run.graphs:
        raise CompileError(nothing_compiled + _why_nothing(run))
    _attach_numerics(run, recording, device, options, time.perf_counter() - started)
    block.run = run_assembly.finish(run, recording.probes, import_seconds, time.perf_counter() - started)


def _cpu_graphs_on_the_cpu(device: str, options: RecordOptions):
    """`--target auto` without a GPU (virtual-cuda): a program's graphs of CPU tensors alone are
    compiled for the CPU, Inductor's C++ kernels, as `auto` does on a GPU machine (cuda); an
    explicit `--target virtual-cuda`, and one rank of a job, copy them onto cuda as before."""
    from kernelscope.engine.devices import virtual_cuda

    if device == "virtual-cuda" and options.device == "auto" and options.world_size is None:
        return virtual_cuda.cpu_graphs_compiled_for_the_cpu()
    return contextlib.nullcontext()


def record_script(path: Path, args: list[str], options: RecordOptions) -> RunRecord:
    """`kernelscope run script.py -- ARGS`: record every compile the script performs. Under
    virtual-cuda the script runs on the virtual GPU (devices/cuda_program.py): it sees a CUDA
    device from its first line."""
    nothing = f"{path}: the script ran but compiled nothing with torch.compile"
    notes: list[str] = []
    with record_block(options, targets.display_path(path, options.workspace), path, nothing) as block:
        options.on_phase("capture", str(path))
        with _program_on(block.device, options) as program_notes:
            try:
                targets.run_script(path, args)
            finally:
                notes += program_notes or []
    block.run.warnings.extend(note for note in notes if note not in block.run.warnings)
    return block.run


def _program_on(device: str, options: RecordOptions):
    """The context a whole program runs in on `device`: virtual-cuda's virtual GPU, else none.
    One rank of a job on the fake process group (`--world-size`) runs on the virtual GPU too,
    and so does a rank torchrun started here, with NCCL served by gloo (devices/real_ranks.py)."""
    from kernelscope.engine.devices import cuda_program

    if device != "virtual-cuda":
        return contextlib.nullcontext()
    if options.world_size is not None:
        return cuda_program.cuda_program(fake_job=True)
    return cuda_program.cuda_program(real_job=cuda_program.launched())
