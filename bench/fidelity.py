"""Fidelity report: how much of each model's generated code kernelscope links back to
model lines, on the model zoo (bench/models/) and the bundled examples.

    python bench/fidelity.py [--repeat 1] [--models gpt2 bert ...] [--target virtual-cuda|cpu-triton|cpu]

Per model and mode (inference, training), each a fresh `kernelscope compile` process:
Triton kernels; kernels whose node set equals Inductor's own mapping (target 100%);
kernel body lines attributed (target >= 95%), and of those the share tied to the one
node that produced them (the rest are index set-up and masks shared by the fused
kernel; no target); wrapper lines attributed (>= 95%);
post-grad nodes traced to a source line, forward and backward (>= 99%); and the
recording overhead, as wall time against a plain torch.compile of the same model
and target measured alternately in the same run (see bench/record_overhead.py).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_overhead import measure_plain, measure_recorded  # noqa: E402

# name -> (PATH.py, inference factory, training factory)
MODELS = {
    "gpt2": ("bench/models/gpt2.py", "make", "make_train"),
    "bert": ("bench/models/bert.py", "make", "make_train"),
    "llama": ("bench/models/llama.py", "make", "make_train"),
    "llama-bf16": ("bench/models/llama.py", "make_bf16", "make_bf16_train"),
    "transformer-encoder": ("bench/models/transformer_encoder.py", "make", "make_train"),
    "mlp": ("examples/mlp.py", "make", "make"),
    "attention": ("examples/attention.py", "make", "make"),
    "conv-bn": ("examples/conv_bn.py", "make", "make"),
}
TARGETS = {"kernel_agreement": 1.0, "kernel_lines": 0.95, "kernel_lines_specific": 0.0, "wrapper_lines": 0.95,
           "forward_nodes_with_source": 0.99, "backward_nodes_with_source": 0.99}


def share(coverage: dict, key: str) -> str:
    ratio = coverage.get(key) or {}
    if ratio.get("share") is None:
        return "n/a"
    mark = "" if ratio["share"] >= TARGETS[key] else " !"
    return f"{ratio['share'] * 100:.1f}%{mark}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--modes", nargs="*", default=["inference", "train"], choices=["inference", "train"])
    parser.add_argument("--repeat", type=int, default=1, help="measurements per side for the overhead (median)")
    parser.add_argument("--target", default="virtual-cuda", choices=["virtual-cuda", "cpu-triton", "cpu"])
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.models:
            path, inference, training = MODELS[name]
            for mode in args.modes:
                train = mode == "train"
                spec = f"{path}:{training if train else inference}"
                plain, recorded = [], []
                for index in range(args.repeat):
                    plain.append(measure_plain(spec, train, args.target))
                    recorded.append(measure_recorded(spec, train, args.target,
                                                     Path(scratch) / f"{name}-{mode}-{index}"))
                summary = recorded[-1]["summary"]
                overhead = statistics.median(r["wall"] for r in recorded) / statistics.median(p["wall"] for p in plain)
                rows.append((name, mode, summary, overhead))
                print(f"  {name} {mode}: done", file=sys.stderr, flush=True)

    print(f"\nfidelity, target {args.target} (! marks a share under its target)")
    print(f"{'model':20} {'mode':9} {'graphs':>6} {'kernels':>7} {'agree':>7} {'kernel ln':>9} {'1 node':>7} "
          f"{'wrapper ln':>10} {'fw nodes':>8} {'bw nodes':>8} {'overhead':>8}")
    for name, mode, summary, overhead in rows:
        coverage = summary["coverage"]
        kernels = sum(g["kernels"] for g in summary["graphs"])
        print(f"{name:20} {mode:9} {len(summary['graphs']):6} {kernels:7} {share(coverage, 'kernel_agreement'):>7} "
              f"{share(coverage, 'kernel_lines'):>9} {share(coverage, 'kernel_lines_specific'):>7} "
              f"{share(coverage, 'wrapper_lines'):>10} "
              f"{share(coverage, 'forward_nodes_with_source'):>8} {share(coverage, 'backward_nodes_with_source'):>8} "
              f"{overhead:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
