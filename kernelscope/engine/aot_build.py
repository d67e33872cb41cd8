"""`--aot`: build the model with AOTInductor instead of calling it under torch.compile.

`build` exports the model with its example inputs (`torch.export.export`) and hands the
exported program to `torch._inductor.aoti_compile_and_package`, inside the recording: the
same probes see Inductor lower and generate the graph, so its C++ wrapper (the `run_impl`
of AOTInductor's model) and its kernels are linked line by line like any recorded graph
(engine/cpp_wrapper_links.py). What it returns describes the `.pt2` package it wrote;
the store keeps a copy with the run (`AotPackage`, run_record.py).

Targets: `cpu` (C++ kernels, the C++ wrapper compiled and linked into the package) and
`cuda` (a real GPU: Triton kernels compiled to cubins; the same path, untested here).
`virtual-cuda` is refused (`VIRTUAL_CUDA_REFUSAL`): its compile takes Dynamo's graph with the
parameters as inputs, and an exported program holds them as constants of the CPU; the
CUDA C++ wrapper of torch.compile is recorded there with `--cpp-wrapper` instead.

An export that fails (data-dependent control flow, an unsupported op) raises one
TargetError naming the user's line and what to do (`export_error`).
"""
from __future__ import annotations

import os
import tempfile
import traceback
import zipfile
from pathlib import Path

from kernelscope.engine.record_options import RecordOptions
from kernelscope.errors import TargetError
from kernelscope.run_record import AotPackage

PACKAGE_NAME = "model.pt2"
VIRTUAL_CUDA_REFUSAL = (
    "--aot --target virtual-cuda is not supported: AOTInductor's CUDA build needs the exported program's "
    "parameters on a (virtual) GPU, which kernelscope does not do yet. Use --aot --target cpu (AOTInductor's "
    "C++ wrapper and C++ kernels), --aot --target cuda on a GPU, or --cpp-wrapper --target virtual-cuda "
    "(torch.compile's CUDA C++ wrapper and Triton kernels, no GPU needed)")


def build(model, inputs: tuple, options: RecordOptions, device: str, source_file: Path | None) -> AotPackage:
    """Export `model` on `inputs` and build its AOTInductor package (inference: AOTInductor
    compiles a forward only)."""
    import torch

    if options.train:
        raise TargetError("--aot builds an inference package (AOTInductor compiles the forward only): drop --train")
    if device == "virtual-cuda":
        raise TargetError(VIRTUAL_CUDA_REFUSAL)
    if device == "cpu-triton":
        raise TargetError("--aot builds for --target cpu (C++ kernels) or cuda (on a GPU); cpu-triton's Triton "
                          "kernels on the CPU are torch.compile's only")
    if options.dynamic:
        raise TargetError("--aot exports with the example inputs' static sizes: drop --dynamic")
    options.on_phase("capture", "torch.export")
    try:
        exported = torch.export.export(model, tuple(inputs))
    except Exception as error:  # noqa: BLE001 - reported as one line at the user's code
        raise export_error(error, source_file) from error
    folder = Path(tempfile.mkdtemp(prefix="kernelscope-aot-"))
    options.on_phase("lower", "AOTInductor")
    path = torch._inductor.aoti_compile_and_package(exported, package_path=str(folder / PACKAGE_NAME))
    return describe(Path(path))


def describe(path: Path) -> AotPackage:
    """The package's size and the files it holds (paths inside the `.pt2` zip)."""
    with zipfile.ZipFile(path) as archive:
        files = sorted(info.filename for info in archive.infolist() if not info.is_dir())
    return AotPackage(local_path=str(path), bytes=path.stat().st_size, files=files)


def export_error(error: BaseException, source_file: Path | None) -> TargetError:
    """torch.export's failure as one line: the user's line it stopped at (the innermost frame
    outside torch and kernelscope), what torch said, and what to do."""
    from kernelscope.engine import fx_nodes

    skip = fx_nodes.skip_prefixes() + (os.path.dirname(os.path.dirname(__file__)) + os.sep,)
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if not frame.filename.startswith(skip):
            location = f"{frame.filename}:{frame.lineno}"
    location = location or str(source_file or "")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    first = lines[0] if lines else type(error).__name__
    data_dependent = "data-dependent" in str(error) or "data dependent" in str(error)
    advice = ("torch.export traces one graph for all inputs, so Python control flow on a tensor's value "
              "cannot be exported: rewrite it with torch.cond (or torch.where), or record without --aot "
              "(torch.compile breaks the graph there)" if data_dependent else
              "make the model exportable (https://pytorch.org/docs/stable/export.html), or record without "
              "--aot")
    return TargetError(f"{location}: torch.export failed ({type(error).__name__}: {first[:300]}): {advice} "
                       "(the last good run in the store is unchanged)")
