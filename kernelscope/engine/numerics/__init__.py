"""`kernelscope numerics`: where compiled and eager part ways, at the model line (docs/numerics.md).

- `capture`   — while the compiled model runs: each graph call's inputs, the buffers each
                Triton kernel launch wrote (copied right after the launch) and what each
                extern kernel or fallback op the wrapper called returned;
- `reference` — eager's and the float64 judge's value of every post-grad node on those
                inputs, and a kernel's fused nodes computed in its own precision;
- `compare`   — tolerances per dtype and the element-wise judgement;
- `analysis`  — every kernel output compared in launch order, the first divergence and the
                fused node inside its kernel that starts it;
- `fallback`  — Inductor's config for a recompile with a line's nodes left to eager (its
                per-node fallback key, read by torch 2.11 on), or with emulate_precision_casts;
- `fixes`     — the two recompiles tried on a first divergence, and whether it is gone.
"""
