"""Device targets: the code torch.compile generates for `cuda`, `virtual-cuda` or `cpu-triton`.

`device_target` is the switch: `resolve_device` picks the target, `device_target(device)`
enters it around a compile (recording.py enters it for every recording; the benchmark's
plain compile too). `cuda` changes nothing. The rest is what the other two need.

Map
- `device_target`     — the switch: `DEVICES`, `resolve_device`, `device_target`.
virtual-cuda (the CUDA code of an sm_90 GPU, without a GPU; docs/targets.md):
- `virtual_cuda`      — its compile_fx: the graph copied onto fake cuda tensors, torch.cuda
  answering as an H100; enters the modules below for the whole compile.
- `fake_cuda`         — CPU-backed fake cuda tensors autograd can trace through; C++ device
  answers by where they run; `Tensor.to` and C++ composites decided on the Python device.
- `cuda_fakes`        — `fake_cuda_like`: a fresh fake cuda tensor standing for another.
- `lifted_constants`  — tensors made from data in `forward`, lifted as cuda constants.
- `real_compute`      — what torch computes for real while compiling runs on the CPU;
  reaching the CUDA runtime raises.
- `cuda_attention`    — SDPA decomposed as ATen's CUDA composite does ...
- `sdpa_choice`       — ... with the backend ATen's `select_sdp_backend` picks on sm_90.
- `cuda_batch_norm`   — BatchNorm's backend as a CUDA build picks it (cuDNN's path).
- `cuda_softmax`      — softmax told fp32 on an fp16 input: the fp16-to-fp32 kernel, as on a GPU.
- `cuda_guard`        — CPU builds: a no-op CUDA device guard in c10's registry.
- `triton_driver`     — a Triton driver that answers "an sm_90 CUDA GPU".
- `meta_models`       — models built on the meta device, recorded without a weight.
- `fake_distributed`  — DTensor inputs, NCCL as on a CUDA build, torch's fake process group.
- `device_audit`      — which device query was answered what while compiling (tests).
- `virtual_cuda_aot`  — `--aot --target virtual-cuda`: AOTInductor's CUDA sources and cubins,
  built without a GPU (each Triton kernel compiled for one config, never launched).
virtual-cuda programs (`kernelscope run`: a whole GPU program on the virtual GPU; docs/targets.md,
"Your GPU program, unmodified"):
- `cuda_program`      — the context a program runs in: everything below entered, Dynamo told
  about the virtual GPU, what cannot be given refused in one line.
- `program_mode`      — the torch-function mode: "cuda" made on the CPU, results kept there.
- `virtual_gpu_tensor` — the virtual GPU's tensors: CPU tensors whose Python device is cuda:0
  (a torchrun rank's `cuda:<local rank>`).
- `cuda_runtime`      — what torch.cuda and torch.accelerator answer (one emulated H100).
- `cuda_autocast`     — torch.autocast("cuda") with CUDA's op lists on the virtual GPU's tensors.
- `virtual_dtensor`   — DTensor on the virtual GPU: one rank of a job (`--world-size`) on a cuda mesh.
- `real_ranks`        — ranks torchrun starts: NCCL served by gloo, a GPU per local rank,
  NCCL's own API refused.
- `program_results`   — tensors made below the mode (vmap's, Dynamo's eager graph's) handed
  back on the virtual GPU (FlexAttention's BlockMask).
- `user_triton`       — the program's own Triton kernels launched in Triton's interpreter.
- `program_refusal`   — what cannot be given, refused in one line at the program's line.
- `factory_program`   — a factory under virtual-cuda run as a GPU program: its model and
  inputs put on the virtual GPU, so device branches take the GPU's way.
- `program_hops`      — higher-order ops (`torch.cond`, `while_loop`, ...) run eagerly as the
  CPU program's.
- `program_autograd`  — the backward inside the program mode (checkpoint's recomputation);
  checkpoint's determinism check on C++ devices.
- `program_optimizers` — an optimizer's `zero_grad` and `_init_group` run below the mode once
  every parameter has its state (the cost of tiny steps).
- `eager_regions`     — Dynamo's graph run eagerly calls nested compile regions inline (also
  for factories).
cpu-triton (Inductor's Triton backend on CPU tensors):
- `cpu_triton`        — the backend switched on; `--execute` in Triton's interpreter.
- `codegen_only`      — generated wrappers kept and never loaded (also virtual-cuda's).

Where a new device port goes: what a GPU decides and virtual-cuda must decide the same way
(another ATen backend choice, another device query) is a module here, entered from
`virtual_cuda.make_compile_fx` (for the compile) or `device_target` (around the whole
recording); each place it changes in torch is a patch point declared in
engine/patch_points.py under "virtual-cuda" and changed only through engine/patching.py;
ported ATen code gets an entry in engine/ports.py with its drift check. A new target is a
name in `device_target.DEVICES`, one branch of `device_target`, and its own patch-point
feature, checked whole before anything compiles (`patch_points.require`).
"""
