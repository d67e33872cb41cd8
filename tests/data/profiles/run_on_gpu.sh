# temporary (not committed): the second device call — `compile --profile` end to end
cd "$(dirname "$0")/../../.." || exit 1
export TORCHINDUCTOR_COMPILE_THREADS=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=.
S=/tmp/s; mkdir -p $OUT
ks() { python3 -m kernelscope "$@"; }
for spec in "examples/mlp.py:make" "examples/mlp.py:make --train" "examples/attention.py:make --train" "examples/conv_bn.py:make" "examples/conv_bn.py:make --train" "bench/models/gpt2.py:make_train --train" "bench/models/llama.py:make_train --train"; do
  echo "=== compile $spec --profile"
  ks compile $spec --target cuda --profile --steps 20 --store $S 2>&1 | grep -v "^  coverage\|^    \(kernel\|wrapper\|forward\|backward\|  \.\.\.\)" ; echo "rc=${PIPESTATUS[0]}"
done
echo "=== json"
ks compile examples/attention.py:make --target cuda --profile --steps 5 --json --store $S > $OUT/attention_profile.json; echo "rc=$?"
python3 -c "import json; d=json.load(open('$OUT/attention_profile.json')); p=d['profile']; print({k: p[k] for k in ('steps','step_time_us','device_time_us','attributed_share','outside_graphs_us','graph_calls')})"
ks runs --store $S
ls -la $S/runs/*/profile.trace.json.gz
cp $S/runs/6/profile.trace.json.gz $OUT/gpt2_train.profile.trace.json.gz 2>/dev/null
