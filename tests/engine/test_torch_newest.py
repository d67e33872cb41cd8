"""The newest torch beside the pinned one: a fixed subset recorded on virtual-cuda with the
interpreter of `.venv-torch-newest` (torch 2.14.1, the CUDA build, no GPU; made by
scripts/setup.sh), which a new user's `pip install torch` brings. The rest of the suite runs
on the pinned torch of `.venv` (2.13).

The subset: every example (examples/*.py `make`), the zoo (bench/models/), and one model of
each suite family (bench/suite/registry.REPRESENTATIVES), inference and training, each held
to the floors the pinned torch's tests hold it to (tests/engine/test_zoo.py, bench/suite.py's
FLOORS). Each group is recorded in one process (tests/engine/torch_newest_record.py), two at a time.
And `kernelscope doctor --torch` finds every patch point there as expected.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
from suite import registry  # noqa: E402  (bench/suite/registry.py: the families' representatives)

pytestmark = pytest.mark.slow

NEWEST = REPO / ".venv-torch-newest" / "bin" / "python"
EXAMPLES = ["attention", "conv_bn", "function", "graph_break", "mlp", "nanogpt"]
ZOO = ["bert", "gpt2", "llama", "moe", "small_cnn", "transformer_encoder"]
# Zoo floors (tests/engine/test_zoo.py) for examples and zoo models; the suite's own for the suite.
ZOO_FLOORS = {"kernel_agreement": 1.0, "kernel_lines": 0.95, "wrapper_lines": 0.95,
              "forward_nodes_with_source": 0.99, "backward_nodes_with_source": 0.99}
SUITE_FLOORS = {"kernel_lines": 0.95, "wrapper_lines": 0.95, "kernel_agreement": 0.95,
                "forward_nodes_with_source": 0.95, "backward_nodes_with_source": 0.95}


def _both(spec: str, train_spec: str) -> list[str]:
    return [spec, f"{train_spec}:train"]


def _suite_targets(families) -> list[str]:
    targets = []
    for family in families:
        model = registry.BY_NAME[registry.REPRESENTATIVES[family]]
        targets += _both(model.shown_spec(False), model.shown_spec(True))
    return targets


# One process per group; the heavier suite models split over two groups.
GROUPS = {
    "examples": [target for name in EXAMPLES
                 for target in _both(f"examples/{name}.py:make", f"examples/{name}.py:make")],
    "zoo": [target for name in ZOO
            for target in _both(f"bench/models/{name}.py:make", f"bench/models/{name}.py:make_train")],
    "suite-language": _suite_targets(["decoder", "encoder-decoder", "encoder", "moe"]),
    "suite-vision": _suite_targets(["vision-transformer", "conv", "diffusion-unet"]),
}
CASES = [(group, target) for group, targets in GROUPS.items() for target in targets]


def _newest_or_skip():
    if NEWEST.exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{NEWEST} is missing: scripts/setup.sh makes it (CI records the newest torch too)")
    pytest.skip("no .venv-torch-newest here (./scripts/setup.sh makes it)")


def _record_group(targets: list[str]) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1")
    done = subprocess.run([str(NEWEST), str(Path(__file__).with_name("torch_newest_record.py")), *targets], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1500)
    rows = {}
    for line in done.stdout.splitlines():  # a model's own prints are not JSON rows
        if line.startswith('{"target"'):
            row = json.loads(line)
            rows[row["target"]] = row
    for target in targets:
        rows.setdefault(target, {"target": target, "recorded": False,
                                 "error": f"no row (exit {done.returncode}): {done.stderr[-2000:]}"})
    return rows


@pytest.fixture(scope="session")
def newest_rows() -> dict[str, dict]:
    _newest_or_skip()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_record_group, GROUPS.values()))
    return {target: row for rows in results for target, row in rows.items()}


@pytest.mark.parametrize("group, target", CASES, ids=[target for _, target in CASES])
def test_records_on_the_newest_torch_with_the_pinned_floors(newest_rows, group, target):
    row = newest_rows[target]
    assert row["recorded"], f"{target}: {row.get('error')}\n{row.get('traceback', '')}"
    assert not row["torch"].startswith("2.13"), row["torch"]
    train = target.endswith(":train")
    assert row["provenance"] == "line"
    # (a graph break makes several graphs: a training step has a backward, inference none)
    assert "backward" in row["kinds"] if train else set(row["kinds"]) == {"inference"}, row["kinds"]
    # The only warning allowed names an upstream fix applied (torch_fixes.py): this torch has the bug.
    assert [warning for warning in row["warnings"] if not warning.startswith("applied the fix of")] == []
    floors = SUITE_FLOORS if group.startswith("suite") else ZOO_FLOORS
    for key, floor in floors.items():
        share = row["coverage"][key]["share"]
        if key == "backward_nodes_with_source" and not train:
            assert share is None
            continue
        assert share is not None and share >= floor, f"{target}: {key} {row['coverage'][key]}"


def test_doctor_finds_every_patch_point_as_expected_on_the_newest_torch():
    _newest_or_skip()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([str(NEWEST), "-m", "kernelscope", "doctor", "--torch", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert not report["torch"].startswith("2.13")
    assert [row for row in report["patch_points"] if row["kind"] == "patch" and row["status"] != "ok"] == []
    assert [row for row in report["patch_points"] if row["status"] == "broken"] == []
