#!/usr/bin/env bash
# virtual-cuda on the CUDA build of torch (what most Linux users install), on a machine
# without a GPU: installs torch 2.14.1 (CUDA build, ~5.5 GB) into .venv-cuda and records
# examples and zoo models, inference and training. Not part of the test suite (size).
#   ./scripts/check-cuda-build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-cuda}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet torch==2.14.1 numpy transformers==5.17.0
"$VENV/bin/python" -m pip install --quiet -e .
"$VENV/bin/python" -c "import torch; assert torch.backends.cuda.is_built(), 'not a CUDA build'; print('torch', torch.__version__, 'GPU available:', torch.cuda.is_available())"
export TORCHINDUCTOR_COMPILE_THREADS=1 HF_HUB_OFFLINE=1 KERNELSCOPE_LAYERS=2
store=$(mktemp -d)/.kernelscope
for spec in "examples/mlp.py:make" "examples/mlp.py:make --train" "examples/attention.py:make --train" \
            "examples/conv_bn.py:make --train" "examples/graph_break.py:make" \
            "bench/models/gpt2.py:make_train --train" "bench/models/llama.py:make_train --train" \
            "bench/models/bert.py:make" \
            "tests/data/tensors_in_forward.py:make_factories --train" "tests/data/tensors_in_forward.py:make_new_and_to" \
            "tests/data/tensors_in_forward.py:make_cache_like --train" "tests/data/tensors_in_forward.py:make_sinusoidal_positions" \
            "tests/data/hf_defaults.py:make_llama" "bench/models/llama3_8b_meta.py:make_train --train"; do
  # shellcheck disable=SC2086
  "$VENV/bin/kernelscope" compile $spec --target virtual-cuda --store "$store" --json > "$store.last.json"
  "$VENV/bin/python" - "$store.last.json" "$spec" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
coverage = summary["coverage"]
assert summary["device"] == "virtual-cuda" and summary["provenance"] == "line", summary
assert coverage["kernel_agreement"]["share"] == 1.0 and coverage["kernel_lines"]["share"] >= 0.95, coverage
print(f"ok  {sys.argv[2]:40} {sum(g['kernels'] for g in summary['graphs']):3} Triton kernels, torch {summary['torch']}")
PY
done
