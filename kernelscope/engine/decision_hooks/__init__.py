"""Timing decisions hooked in torch: what Inductor decides by timing on a GPU (docs/decisions.md).

On `--target cuda` the GPU's answers are recorded; on virtual-cuda they are replayed from
such a recording (`--decisions`) or guessed by Inductor's own rule, and the run says
which. The data model (decisions, keys, where a recording comes from) is torch-free, in
`kernelscope.decisions`; this package holds the hooks into torch.

Map
- `session`        — a recording's decisions start to end: `recording(log)` (a GPU),
  `replaying(log)` (virtual-cuda), launch configs after the run, the run's warnings.
- `log`            — `DecisionLog`: the decisions one recording makes, replays or guesses.
- `pad_mm_hooks`   — pad_mm: compute bound? padding faster? (patch points "timing decisions").
- `autotune_hooks` — max-autotune's choice per GEMM/convolution, fusion benchmarks.
- `inductor_keys`  — decision keys made from Inductor's own cache keys.

A new timing decision: a hooks module here whose patch points are declared in
engine/patch_points.py under "timing decisions", entered from `session.recording` and
`session.replaying`, its key in `inductor_keys`.
"""
