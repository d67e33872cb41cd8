"""The VS Code extension's own unit tests (TypeScript, node's test runner:
`npm test` at the repo root), run as part of the Python suite so that CI runs them."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import REPO


def test_extension_unit_tests():
    if shutil.which("npm") is None or not (REPO / "node_modules" / "typescript").is_dir():
        pytest.fail("the extension's npm packages are missing: run ./scripts/setup-editors.sh (or ./scripts/setup.sh)")
    result = subprocess.run(["npm", "test", "--silent"], cwd=REPO, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    passed = re.search(r"^# pass (\d+)$", output, re.M)
    failed = re.search(r"^# fail (\d+)$", output, re.M)
    assert passed and int(passed.group(1)) >= 30, output[-3000:]
    assert failed and int(failed.group(1)) == 0
