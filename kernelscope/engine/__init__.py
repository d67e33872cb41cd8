"""The engine: drives a real torch.compile and records where every generated line came from.

The only part of kernelscope that imports torch and triton (tests/whole/test_layers.py holds every
other package to that). Front ends reach it through `recorder` (in-process: the CLI, the
Python API) or the `worker` subprocess (the language server, the TUI, watch mode).

Map — one job per module, from the entry points down:

Recording a compile
- `recorder`        — the entry points: `record_factory`, `record_model`, `record_block`,
  `record_script`; each orchestrates one recording with the modules below.
- `record_options`  — `RecordOptions`: what one recording is asked to do.
- `recording`       — `import_torch`, and `Recording`: the context around the user's code
  (fresh codegen, probes and trace capture installed, the device target entered).
- `user_model`      — the user's model made ready for the target and called compiled
  (inputs, `--train`'s loss, `--execute`'s comparison with eager).
- `error_translation` — an exception from the user's code or the compile as a one-line
  UserError / TargetError / CompileError at the user's file:line.
- `run_assembly`    — what the recording saw assembled into a `RunRecord` (graphs, breaks,
  recompiles, decisions, warnings, timings).
- `targets`         — loading what to compile: `path.py:factory`, a script, the workspace's
  modules (from source, forgotten between recompiles in the worker).
- `worker`          — the warm engine worker: JSON-RPC over stdio (`record`, `asm`);
  `worker_failures` says where a failed recording failed, in the user's terms.
- `profiling`       — `compile --profile`: profiled GPU steps inside the same recording.
- `aot_build`       — `--aot`: torch.export + AOTInductor's package built inside the recording
  (docs/aot.md); an export that fails as one error at the user's line.
- `numerics`        — `kernelscope numerics`: every kernel's outputs against eager, the
  first divergence at its model line, the fixes (its own map: `engine/numerics/__init__.py`).

Seeing what Inductor does
- `probes`          — line-level provenance: which post-grad node each kernel line and
  wrapper line came from (hooks into Inductor); `captures` holds what they capture.
- `cpp_kernels`     — the same for the C++ kernels of Inductor's CPU backend: each line's node
  or loop nest, and where the recorded loop code sits in the kernel's source.
- `distributed_probes` — DDP's graph splits, passes that move collectives, the rank.
- `trace_capture`   — torch's structured-trace records received in-process.
- `why_probes`      — why: the fusions Inductor's scheduler refused, the buffers its lowering
  realized and the values a call had when a guard failed; `why_assembly` adds them, the
  extern calls' neighbours, the graph breaks' pairs and the trace's guards and recompile
  reasons (compile_text/guards.py) to the RunRecord (docs/why.md).
- `cuda_target_notes` — `--target cuda`: the run's warnings about graphs compiled for the CPU
  (CPU tensors) and forwards whose backward never ran.
- `links`           — probes + trace -> GraphRecords with links, each with its reason;
  `cpp_wrapper_links` links a C++ wrapper's lines (AOTInductor, cpp_wrapper mode).
- `subgraphs`       — higher-order ops' subgraphs (cond branches, while_loop, nested compile
  regions): their call sites, label, pre-grad subgraph, and their code inside the parent's wrapper.
- `recompute`       — backward nodes that recompute forward ops (checkpointing), tied to the
  forward node and line they recompute.
- `inductor_reads`  — small reads of Inductor's objects the probes make (a frozen pre-grad graph,
  a template's node, torch's table of the program's own Triton kernels).
- `template_mods`   — FlexAttention's score_mod and mask_mod as subgraphs of their graph, the
  template lines that inline them linked to their nodes.
- `fx_nodes`        — an FX node as a record: its user stack, module instance, pass lineage.
- `collectives`     — each collective of a post-grad graph and why it is there.
- `user_kernels`    — a program's own Triton kernels: each line of Inductor's copy linked to
  the user's kernel line, and the autotune config the run launched.
- `kernel_parts`    — a foreach/combo kernel's sub-kernels: each one's block of lines, nodes
  and the optimizer parameters it updates.
- `optimizer_params` — which optimizer parameter (group, index, name, shape) each input of a
  compiled optimizer step is.
- `memory`          — a graph's memory from its compile: sizes from Inductor's IR at codegen,
  the allocation timeline, what each forward saves for its backward (docs/memory.md).
- `eager_memory`    — `--against-eager`: what eager saves for the backward, per model line
  (the forward under saved-tensor hooks).
- `memory_measure`  — `--memory`: the compiled step run again with its allocations recorded
  (the CUDA allocator's history; the CPU allocator on cpu-triton --execute), joined to wrapper lines.
- `rank_info`       — which rank of which distributed job this process is.
- `asm_launches`    — `--target cuda`: the launch config each kernel's autotuner chose.
- `asm_build`       — a stored Triton kernel compiled below Triton (PTX, SASS) without a GPU.
- `cpu_asm_build`   — a stored C++ kernel compiled for this CPU (x86-64, its line map, vector width).
- `decision_hooks`  — timing decisions (pad_mm, max-autotune) hooked in torch: recorded on
  a GPU, replayed or guessed on virtual-cuda; the torch-free data model is
  `kernelscope.decisions` (its own map: `engine/decision_hooks/__init__.py`).
- `devices`         — the device targets: `cuda`, `virtual-cuda`, `cpu-triton`, `cpu`, and the
  switch that enters one (its own map: `engine/devices/__init__.py`).

Changing torch, one register (nothing else replaces anything inside torch or Triton)
- `patching`        — the mechanism: `PatchPoint`, `Patches` (replace, wrap, set_item; all
  put back), `install_groups`, `checked`.
- `patch_points`    — the register: every place patched, declared once under its feature,
  and `require(feature)` for features that cannot work in part.
- `program_patch_points` — the register's "virtual-cuda program" points (and its optimizer
  fast path), listed with the rest in `patch_points.POINTS`.
- `ports`           — ATen code ported to Python, with drift checks.
- `torch_compat`    — every torch version gate, in one table.
- `torch_fixes`     — upstream fixes for torch bugs, applied while recording.
- `torch_doctor`    — `kernelscope doctor --torch`: every point, port and gate checked.

Text parsing shared with `kernelscope import` (wrapper code, printed graphs, stack traces,
structured-trace records, graph breaks) lives outside the engine, torch-free, in
`kernelscope.compile_text`.

Where new things go
- a new device port (emulating what a GPU decides, e.g. another ATen backend choice):
  a module in `devices/`, entered from `devices/virtual_cuda.py` (or `device_target`),
  its patch points in `patch_points` under "virtual-cuda", and, if it ports ATen code,
  an entry in `ports.PORTS` with its drift check;
- a new device target: see `devices/device_target.py` (`DEVICES`, one branch of
  `device_target`, a patch-point feature of its name);
- a new probe: a group in `probes.Probes._probe_groups` (or `distributed_probes`), its
  points in `patch_points` under "line provenance" (or "distributed"), what it saw read
  in `links`;
- a new patch point: declared once in `patch_points`, patched only through `patching`;
  `kernelscope doctor --torch` lists it from there;
- a new version difference: a gate in `torch_compat.GATES`;
- a new timing decision: a hooks module in `decision_hooks/`, entered from
  `decision_hooks/session`.
"""
