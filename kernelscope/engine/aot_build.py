"""`--aot`: build the model with AOTInductor instead of calling it under torch.compile.

`build` exports the model with its example inputs (`torch.export.export`) and hands the
exported program to `torch._inductor.aoti_compile_and_package`, inside the recording: the
same probes see Inductor lower and generate the graph, so its C++ wrapper (the `run_impl`
of AOTInductor's model) and its kernels are linked line by line like any recorded graph
(engine/cpp_wrapper_links.py). What it returns describes the `.pt2` package it wrote;
the store keeps a copy with the run (`AotPackage`, run_record.py).

Targets: `cpu` (C++ kernels, the C++ wrapper compiled and linked into the package),
`cuda` (a real GPU: Triton kernels compiled to cubins; the same path) and `virtual-cuda`
(no GPU: the factory runs on the virtual GPU, so the export holds the parameters as cuda
tensors, and the package holds the CUDA C++ wrapper, CMake files and the Triton kernels'
cubins, compiled for one config each and never launched, without a built `.so`:
devices/virtual_cuda_aot.py).

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


def build(model, inputs: tuple, options: RecordOptions, device: str, source_file: Path | None,
          notes: list[str]) -> AotPackage:
    """Export `model` on `inputs` and build its AOTInductor package (inference: AOTInductor
    compiles a forward only). What the run should say about the build goes to `notes`."""
    import torch

    check(options, device)
    options.on_phase("capture", "torch.export")
    try:
        exported = torch.export.export(model, tuple(inputs))
    except Exception as error:  # noqa: BLE001 - reported as one line at the user's code
        raise export_error(error, source_file) from error
    package_path = str(Path(tempfile.mkdtemp(prefix="kernelscope-aot-")) / PACKAGE_NAME)
    options.on_phase("lower", "AOTInductor")
    if device != "virtual-cuda":
        return describe(Path(torch._inductor.aoti_compile_and_package(exported, package_path=package_path)))
    from kernelscope.engine.devices import virtual_cuda_aot

    virtual_cuda_aot.constants_on_the_gpu(exported, source_file)
    chosen: list[str] = []
    with virtual_cuda_aot.building(chosen):
        path = torch._inductor.aoti_compile_and_package(exported, package_path=package_path,
                                                        inductor_configs=virtual_cuda_aot.INDUCTOR_CONFIGS)
    notes.append(virtual_cuda_aot.NO_SO_NOTE)
    notes.extend(f"--aot --target virtual-cuda: Triton kernel {line}" for line in chosen)
    return describe(Path(path))


def check(options: RecordOptions, device: str) -> None:
    """The options an AOT build refuses, before anything is loaded."""
    if options.train:
        raise TargetError("--aot builds an inference package (AOTInductor compiles the forward only): drop --train")
    if device == "cpu-triton":
        raise TargetError("--aot builds for --target cpu (C++ kernels), cuda (on a GPU) or virtual-cuda (CUDA "
                          "sources without a GPU); cpu-triton's Triton kernels on the CPU are torch.compile's only")
    if options.dynamic:
        raise TargetError("--aot exports with the example inputs' static sizes: drop --dynamic")


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
