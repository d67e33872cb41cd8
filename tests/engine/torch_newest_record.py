"""Record targets on virtual-cuda in this one process, one JSON line per target (stdout).

Run by tests/engine/test_torch_newest.py with the newest torch's interpreter (.venv-torch-newest,
made by scripts/setup.sh), so one process records a whole group of models:

    .venv-torch-newest/bin/python tests/engine/torch_newest_record.py examples/mlp.py:make examples/mlp.py:make:train

A target is `path.py:factory`, with `:train` appended to record a training step.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(REPO))


def record(target: str) -> dict:
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.store.writing.coverage import compute_coverage

    spec, train = (target.removesuffix(":train"), True) if target.endswith(":train") else (target, False)
    row = {"target": target}
    started = time.perf_counter()
    try:
        run = record_factory(str(REPO / spec), RecordOptions(device="virtual-cuda", train=train, workspace=REPO))
    except BaseException as error:  # noqa: BLE001 - reported in the row
        return dict(row, recorded=False, error=f"{type(error).__name__}: {error}"[:2000],
                    traceback=traceback.format_exc(limit=8)[-3000:])
    return dict(row, recorded=True, torch=run.torch_version, provenance=run.provenance, warnings=run.warnings,
                kinds=[graph.kind for graph in run.graphs],
                triton_kernels=sum(kernel.kind == "triton" for graph in run.graphs for kernel in graph.kernels),
                coverage=compute_coverage(run), seconds=round(time.perf_counter() - started, 1))


def main(targets: list[str]) -> int:
    for target in targets:
        print(json.dumps(record(target)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
