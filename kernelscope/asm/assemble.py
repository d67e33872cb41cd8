"""From what Triton's compiler returned for one kernel to a KernelAsm: the SASS
(nvdisasm), the resources (cuobjdump), the line maps of every stage and the facts."""
from __future__ import annotations

from dataclasses import dataclass

from kernelscope.asm import facts, linemaps, tools
from kernelscope.asm.model import AsmFacts, KernelAsm, LaunchConfig


@dataclass
class CompiledStages:
    """A kernel as Triton compiled it (`CompiledKernel.asm` and `.metadata`)."""

    name: str  # the kernel function's name
    arch: int  # 90 for sm_90
    ttir: str
    ttgir: str
    ptx: str
    cubin: bytes
    num_warps: int
    num_stages: int
    shared_bytes: int  # Triton's dynamic shared memory per block (metadata.shared)
    ptxas_log: str = ""  # `ptxas -v` output of the compile (spill stores and loads)


def assemble(compiled: CompiledStages, kernel_path: str, config: LaunchConfig,
             candidates: list[LaunchConfig], chosen_by: str, gpu: dict | None = None) -> KernelAsm:
    """`kernel_path` is the file name the kernel was compiled from (its locations name it)."""
    sass = tools.disassemble(compiled.cubin)
    usage = facts.resource_usage(tools.resource_usage_text(compiled.cubin), compiled.name)
    ptx_map, inline_sites = linemaps.ptx_lines(compiled.ptx, kernel_path)
    lines = (linemaps.mlir_lines("ttir", compiled.ttir, kernel_path)
             + linemaps.mlir_lines("ttgir", compiled.ttgir, kernel_path)
             + ptx_map
             + linemaps.sass_lines(sass, kernel_path, inline_sites))
    instructions = linemaps.sass_instructions(sass)
    opcodes = facts.opcode_counts(instructions)
    registers = usage.get("REG", 0)
    limits = facts.limits_for(compiled.arch)
    # cuobjdump's SHARED of a Triton kernel (whose shared memory is all dynamic, `global_smem[]`)
    # is the block's reserved system shared memory (1 KB on sm_90) whenever the kernel uses any:
    # it is counted once, by the occupancy, not again here (an H100's launcher reports
    # metadata.shared alone, bench/asm_gpu_check.py).
    static = usage.get("SHARED", 0)
    if static >= limits.shared_reserved:
        static -= limits.shared_reserved
    shared = compiled.shared_bytes + static
    local_bytes = usage.get("STACK", 0) + usage.get("LOCAL", 0)
    spills = facts.ptxas_spills(compiled.ptxas_log, compiled.name)
    asm_facts = AsmFacts(
        arch=f"sm_{compiled.arch}",
        config=config,
        candidates=candidates,
        chosen_by=chosen_by,
        registers=registers,
        spill_bytes=spills["stores"] if spills else local_bytes,
        spill_load_bytes=spills["loads"] if spills else local_bytes,
        local_bytes=local_bytes,
        local_stores=sum(count for opcode, count in opcodes.items() if opcode.split(".")[0] == "STL"),
        local_loads=sum(count for opcode, count in opcodes.items() if opcode.split(".")[0] == "LDL"),
        shared_bytes=shared,
        num_warps=compiled.num_warps,
        num_stages=compiled.num_stages,
        occupancy=limits.occupancy(registers, shared, compiled.num_warps),
        instructions=len(instructions),
        mix=facts.instruction_mix(instructions),
        gpu=gpu,
    )
    stages = {"ttir": compiled.ttir, "ttgir": compiled.ttgir, "ptx": compiled.ptx, "sass": sass}
    return KernelAsm(kernel_name=compiled.name, facts=asm_facts, stages=stages, lines=lines,
                     tools={"nvdisasm": tools.version("nvdisasm"), "cuobjdump": tools.version("cuobjdump")})
