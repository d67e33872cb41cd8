#!/usr/bin/env bash
# Set up a development environment in .venv (and the newest torch in .venv-torch-newest) and
# record the bundled MLP example.
#   ./scripts/setup.sh            set up, then compile examples/mlp.py:make and query it
#   ./scripts/setup.sh --no-demo  set up only
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
# The model suite's torchvision and timm, apart from site-packages (bench/suite/vision_libs.py says why).
.venv/bin/python -m pip install --quiet --no-deps --upgrade --target .venv/suite-vision -r requirements-suite-vision.txt
# torchtitan, the distributed client the tests record, without its training stack (requirements-dev.txt says why).
.venv/bin/python -m pip install --quiet --no-deps -r requirements-torchtitan.txt
# Its training stack, for its own trainer (tests/engine/test_torchtitan_trainer.py), apart as well.
.venv/bin/python -m pip install --quiet --no-deps --upgrade --target .venv/torchtitan-train -r requirements-torchtitan-train.txt
# kernelscope itself, editable, with its light dependencies (rich, jsonschema, watchdog).
.venv/bin/python -m pip install --quiet -e '.[dev]'
# The terminal UI's end-to-end test drives `kernelscope tui` in a real terminal (tmux).
if ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo "sudo -n")
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq tmux >/dev/null; } \
    || echo "setup: could not install tmux; tests/tui/test_tui_tmux.py will be skipped" >&2
fi
# The newest torch beside the pinned one (tests/engine/test_torch_newest.py records a fixed subset with it):
# what a new user's `pip install torch` brings, the CUDA build (~5.5 GB), in .venv-torch-newest.
NEWEST_TORCH=${NEWEST_TORCH:-2.14.1}
if ! .venv-torch-newest/bin/python -c "import torch, transformers, kernelscope; assert torch.__version__.startswith('$NEWEST_TORCH')" 2>/dev/null; then
  [ -x .venv-torch-newest/bin/python ] || "$PYTHON" -m venv .venv-torch-newest
  .venv-torch-newest/bin/python -m pip install --quiet "torch==$NEWEST_TORCH" triton numpy \
    transformers==5.17.0 diffusers==0.42.1 pillow==13.0.0 pyyaml==6.0.3
  .venv-torch-newest/bin/python -m pip install --quiet -e .
fi
# The VS Code extension (.vsix) and its end-to-end test: Chromium, code-server, Playwright.
./scripts/setup-editors.sh

if [ "${1:-}" != "--no-demo" ]; then
  export TORCHINDUCTOR_COMPILE_THREADS=1
  .venv/bin/kernelscope compile examples/mlp.py:make
  .venv/bin/kernelscope query examples/mlp.py:21
fi
