"""`kernelscope compile --profile`: record a compile, then run the compiled model on
the GPU under torch.profiler and write a chrome trace of its steps.

The profiled steps run inside the same recording as the compile, on the very
compiled model that was recorded, so every kernel in the trace is a kernel of
the run (no second compile that could fuse differently). The trace is then
joined to the stored run by kernelscope.profile (pure Python), like a trace a
user brings with `kernelscope profile`.
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.run_record import RunRecord

WARMUP_STEPS = 2  # after the compiling step: caches, cuBLAS handles, autotuning out of the timed steps


def check_profile_target(device: str) -> None:
    """--profile runs the kernels: only the real CUDA target can. One clear line otherwise."""
    import torch

    if not torch.cuda.is_available():
        raise UserError(
            "--profile runs the compiled model on a GPU, and no CUDA GPU is available here "
            f"(torch {torch.__version__}): run it on a GPU machine, or record a trace there with "
            "torch.profiler and attach it with `kernelscope profile TRACE.json`"
        )
    if device != "cuda":
        raise UserError(f"--profile needs --target cuda (or auto on a GPU machine), not {device}: "
                        "only the real CUDA target runs its kernels")


def record_and_profile(spec: str, options, steps: int, trace_path: Path) -> RunRecord:
    """Record `spec` like `kernelscope compile`, then profile `steps` steps into `trace_path`."""
    from kernelscope.engine import error_translation, run_assembly, targets, user_model
    from kernelscope.engine.devices.device_target import resolve_device
    from kernelscope.engine.recording import Recording, import_torch

    if steps < 1:
        raise UserError(f"--steps must be at least 1, not {steps}")
    target = targets.parse_factory_spec(spec)
    import_seconds = import_torch(options)
    import torch

    device = "cuda" if options.device == "auto" and torch.cuda.is_available() else options.device
    check_profile_target(device)
    device = resolve_device(device)
    options.on_phase("import", str(target.path))
    model, inputs = targets.load_factory(target)
    inputs = user_model.prepare_inputs(model, inputs, options, device)
    started = time.perf_counter()
    with Recording(device, options) as recording:
        try:
            options.on_phase("capture", "Dynamo, AOTAutograd")
            compiled = torch.compile(model, dynamic=True if options.dynamic else None)
            step = _make_step(compiled, inputs, options.train)
            step()  # the recorded compile
            compile_seconds = time.perf_counter() - started
            options.on_phase("profile", f"{WARMUP_STEPS} warm-up + {steps} profiled steps on the GPU")
            profile_started = time.perf_counter()
            _profile(step, steps, trace_path)
            profile_seconds = time.perf_counter() - profile_started
        except UserError:
            raise
        except Exception as error:  # noqa: BLE001 - reported as a one-line error
            error_translation.raise_translated(error, target.path, recording.probes)
    shown = f"{targets.display_path(target.path, options.workspace)}:{target.factory}"
    run = run_assembly.build_run(recording, shown, options, device)
    if not run.graphs:
        raise UserError(f"{target.path}: torch.compile produced no graph to record")
    run = run_assembly.finish(run, recording.probes, import_seconds, compile_seconds)
    run.timings["profile"] = round(profile_seconds, 4)
    run.config = {**run.config, "profile_steps": steps}
    return run


def _make_step(compiled, inputs, train: bool):
    """One step: forward (and with --train the backward of the scalar loss), then a
    synchronize, so a ProfilerStep range holds the step's device work."""
    import torch

    from kernelscope.engine.user_model import scalar_loss

    def step():
        if train:
            scalar_loss(compiled(*inputs)).backward()
        else:
            with torch.no_grad():
                compiled(*inputs)
        torch.cuda.synchronize()

    return step


def _profile(step, steps: int, trace_path: Path) -> None:
    import torch

    for _ in range(WARMUP_STEPS):
        step()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    # One profiler warm-up step (the profiler's own start-up), then `steps` recorded ones.
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1)
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # "Profiler clears events at the end of each cycle": there is one cycle here.
        warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle.*")
        with torch.profiler.profile(
            activities=activities, schedule=schedule,
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(trace_path)),
        ) as prof:
            for _ in range(1 + steps):
                step()
                prof.step()
    if not trace_path.exists():
        raise UserError(f"torch.profiler wrote no trace to {trace_path}")
