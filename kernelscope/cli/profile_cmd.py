"""`kernelscope profile TRACE.json [--run ID]`: attach a torch.profiler trace's device
time to a run (and `compile --profile`, which records a run and its trace on a GPU)."""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from kernelscope.cli.common import new_parser, open_store, parse_run_id, print_json
from kernelscope.errors import UserError


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "profile",
        help="attach a torch.profiler chrome trace's device time to a run's kernels and lines",
        description="Read a chrome trace written by torch.profiler (`prof.export_chrome_trace`, .json or "
        ".json.gz) of a job that ran the compiled model, and attach each kernel's device time to the run "
        "of the same compile: Triton kernels by name, extern calls (cuBLAS, cuDNN, attention) through the "
        "launch to the op their wrapper line issued. Device time outside the compiled graphs is reported "
        "as such. A trace whose kernels are not the run's is refused, naming them. Times are per step "
        "(ProfilerStep ranges). Attaching again replaces the run's profile.",
        examples=[
            "TORCH_TRACE=logs python train.py          # on the cluster: logs + prof.export_chrome_trace('trace.json')",
            "kernelscope import logs/",
            "kernelscope profile trace.json             # attaches to the latest run",
            "kernelscope profile trace.json.gz --run 3 --json",
            "kernelscope query model.py:42 --json       # device_time_us on kernels and source lines",
        ],
    )
    parser.add_argument("trace", metavar="TRACE.json", help="torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID",
                        help="the run of the same compile (default: the latest run)")
    parser.add_argument("--top", type=int, default=10, help="kernels and lines listed (default: 10)")
    parser.add_argument("--json", action="store_true", help="print the attached profile as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelscope.profile.attach import attach_trace
    from kernelscope.profile.report import profile_data, render_profile

    with open_store(args) as store:
        profile, _ = attach_trace(store, args.trace, args.run_id)
    data = {"run": profile.run_id, **profile_data(profile, args.top)}
    if args.json:
        print_json(data)
    else:
        print(f"attached {args.trace} to run {profile.run_id}")
        print("\n".join(f"  {line}" for line in render_profile(data)))
        print(f"  next: kernelscope show {profile.run_id}   ·   kernelscope query FILE:LINE")
    return 0


def compile_and_profile(args: argparse.Namespace) -> int:
    """`compile --profile`: record, store, then attach the trace of the profiled steps.
    The trace is kept beside the run (`runs/<id>/profile.trace.json.gz`) for Perfetto."""
    import gzip

    from kernelscope.cli import recording_output
    from kernelscope.engine.profiling import record_and_profile
    from kernelscope.engine.recorder import RecordOptions
    from kernelscope.profile.attach import attach_trace
    from kernelscope.profile.report import profile_data

    scratch = Path(tempfile.mkdtemp(prefix="kernelscope-profile-"))
    trace_path = scratch / "trace.json"

    def record(on_phase):
        options = RecordOptions(
            device=args.target_device, train=args.train, dynamic=args.dynamic,
            execute=args.execute, workspace=Path.cwd(), on_phase=on_phase,
        )
        return record_and_profile(args.target, options, args.steps, trace_path)

    def attach(store, run_id) -> dict:
        try:
            profile, _ = attach_trace(store, trace_path, run_id, source="compile --profile")
        except UserError as error:
            raise type(error)(f"run {run_id} is stored, without device times: {error}") from error
        kept = store.root / "runs" / str(run_id) / "profile.trace.json.gz"
        kept.parent.mkdir(parents=True, exist_ok=True)
        with open(trace_path, "rb") as raw, gzip.open(kept, "wb") as packed:
            shutil.copyfileobj(raw, packed)
        return {**profile_data(profile), "trace_file": str(kept)}

    try:
        return recording_output.record_and_store(args, record, after_store=attach)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
