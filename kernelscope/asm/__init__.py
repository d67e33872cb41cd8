"""Below the kernel: a Triton kernel's TTIR, TTGIR, PTX and SASS, their line maps back
to the kernel's lines, and its resource facts (registers, spills, shared memory,
occupancy, instruction mix).

Nothing here imports torch or triton: these modules read what the engine's build
(kernelscope/engine/asm_build.py) got from Triton's compiler and the NVIDIA tools
the Triton wheel ships (`nvdisasm`, `cuobjdump`).
"""
