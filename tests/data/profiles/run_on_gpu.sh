# `compile --profile` end to end on a GPU machine (what the README's figures come from):
#   bash tests/data/profiles/run_on_gpu.sh [OUT_DIR]
cd "$(dirname "$0")/../../.." || exit 1
export TORCHINDUCTOR_COMPILE_THREADS=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=.
OUT=${1:-${OUT:-/tmp/kernelscope-gpu-profile}}; S=/tmp/ks-gpu-store; rm -rf $S; mkdir -p $OUT
ks() { python3 -m kernelscope "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for spec in "examples/mlp.py:make" "examples/mlp.py:make --train" "examples/conv_bn.py:make --train" \
            "tests/data/profiles/gpu_models.py:nanogpt_gpu --train"; do
  echo "=== compile $spec --target cuda --profile"
  ks compile $spec --target cuda --profile --steps 10 --store $S; echo "rc=$?"
done
echo "=== the same training compile profiled again, then diffed (noise of the device-time gate)"
ks compile examples/mlp.py:make --train --target cuda --profile --steps 10 --store $S > /dev/null; echo "rc=$?"
ks dump --run 2 --store $S -o $OUT/mlp_train_a.json && ks dump --run 5 --store $S -o $OUT/mlp_train_b.json
ks diff $OUT/mlp_train_a.json $OUT/mlp_train_b.json --fail-on device-time; echo "diff exit $?"
echo "=== nanogpt: show, query, re-attach the kept trace"
ks show 4 --store $S | sed -n '/^profile:/,$p'
ks query examples/nanogpt.py:$(grep -n "x = block(x)" examples/nanogpt.py | tail -1 | cut -d: -f1) --store $S | tail -6
ks query examples/nanogpt.py:$(grep -n "self.qkv(x)" examples/nanogpt.py | cut -d: -f1) --store $S --json > $OUT/nanogpt_qkv_query.json; echo "rc=$?"
ks profile $S/runs/4/profile.trace.json.gz --run 4 --store $S | head -8
cp $S/runs/4/profile.trace.json.gz $OUT/nanogpt_gpu_train.trace.json.gz
