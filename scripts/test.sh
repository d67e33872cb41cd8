#!/usr/bin/env bash
# Run the whole test suite (sets the environment up first when .venv is missing).
#   ./scripts/test.sh                 everything, as CI runs it
#   ./scripts/test.sh -m "not slow"   the fast set (no real compiles)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import torch, kernelscope, hypothesis" 2>/dev/null; then
  ./scripts/setup.sh --no-demo
fi
export TORCHINDUCTOR_COMPILE_THREADS=1
exec .venv/bin/python -m pytest "$@"
