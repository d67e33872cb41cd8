#!/usr/bin/env bash
# Set up a development environment in .venv and record the bundled MLP example.
#   ./scripts/setup.sh            set up, then compile examples/mlp.py:make and query it
#   ./scripts/setup.sh --no-demo  set up only
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
# kernelscope itself, editable, with its light dependencies (rich, jsonschema, watchdog).
.venv/bin/python -m pip install --quiet -e '.[dev]'

if [ "${1:-}" != "--no-demo" ]; then
  export TORCHINDUCTOR_COMPILE_THREADS=1
  .venv/bin/kernelscope compile examples/mlp.py:make
  .venv/bin/kernelscope query examples/mlp.py:21
fi
