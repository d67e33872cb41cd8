"""Make torchvision (and timm, which imports it) importable for the suite's vision models.

Where torch is a CPU build (this repository's development machine), torchvision cannot be had
whole: every torchvision wheel on PyPI for Linux x86-64 is a CUDA build whose C++ operators
(`torchvision._C`: nms, roi_align, ...) link against torch's CUDA libraries and do not load.
Installing such a wheel into the project's environment would break `import transformers`, which
imports torchvision when it finds one; so scripts/setup.sh installs torchvision and timm into
`.venv/suite-vision/` instead (requirements-suite-vision.txt), which this module puts on sys.path.

The models need none of those C++ operators (they are detection ops), but torchvision's import
stops at the one unguarded fake registration of `torchvision::nms`/`qnms`, which needs the
operator to exist (pytorch/vision#9085; the upstream fix guards it with `_has_ops()`, as every
other registration there is). `make_importable()` declares those two operator names, with no
kernel, only where `torchvision._C` cannot load; a call of torchvision's nms then fails as it
would with the fix (`_assert_has_ops()`). Where the C++ operators load (a CUDA torch on a GPU
machine) nothing is declared and nothing is changed.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

SITE = Path(__file__).resolve().parents[2] / ".venv" / "suite-vision"
_declared = []


def make_importable() -> None:
    if SITE.is_dir() and str(SITE) not in sys.path:
        sys.path.append(str(SITE))  # appended: a torchvision installed in the environment wins
    if "torchvision" in sys.modules or _declared:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "torchvision is not installed: run ./scripts/setup.sh (it installs torchvision and timm "
            f"into {SITE}), or pip install them where torch has their matching build")
    import torch

    library = os.path.join(spec.submodule_search_locations[0], "_C.so")
    try:
        torch.ops.load_library(library)  # what torchvision.extension does on import
    except OSError:
        lib = torch.library.Library("torchvision", "DEF")  # kept alive: the names live as long as it
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _declared.append(lib)


make_importable()
